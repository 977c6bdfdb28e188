//! The worker process and its pipe. A frame is one line of JSON and, when the line says
//! `bytes`, that many raw bytes (tensors as little-endian f32, in the order of the
//! line's `tensors`). The worker beats every 0.25 s while it works, so a worker that
//! has died or hung is told apart from one that is computing: silence for
//! [`HANG_TIMEOUT`] ends it, and the error names the engine, what it was asked, and its
//! last lines on stderr. A worker that beats but never answers (a deadlock in native code
//! releases the GIL, and the beat goes on) is ended after the per-call limit
//! ([`DEFAULT_CALL_LIMIT`], or `CNNBENCH_WORKER_CALL_LIMIT_S`). A frame the worker
//! announces above [`MAX_FRAME_BYTES`], or one memory cannot hold, is an error, not an
//! abort.

use crate::python::{install_hint, Interpreter};
use anyhow::{anyhow, Context, Result};
use cnnbench_graph::HostTensor;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Silence after which a working worker is taken for hung (it beats 60 times in it).
pub const HANG_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the worker may take to start and import torch (a cold disk is slow).
pub const START_TIMEOUT: Duration = Duration::from_secs(180);
/// The longest one call may take while the worker keeps beating: generous, since the
/// first pass of `torch.compile(mode="max-autotune")` on a large model takes many
/// minutes. `CNNBENCH_WORKER_CALL_LIMIT_S` sets another.
pub const DEFAULT_CALL_LIMIT: Duration = Duration::from_secs(2 * 3600);
/// The variable that sets the per-call limit, in seconds.
pub const CALL_LIMIT_VARIABLE: &str = "CNNBENCH_WORKER_CALL_LIMIT_S";
/// The largest frame the worker may announce. The largest legitimate ones hold a model's
/// weights or gradients (vgg19, the zoo's largest: 143.7 M parameters, 575 MB as f32)
/// or the outputs of the nodes `verify` keeps at its batch; a model file may hold up to
/// 16 GiB of weights (the ONNX external-data limit). 64 GiB covers all of them; a frame of
/// 10¹² bytes aborted cnnbench when its buffer was allocated.
pub const MAX_FRAME_BYTES: u64 = 64 << 30;
/// Lines of the worker's stderr kept for error messages.
const STDERR_LINES: usize = 30;
/// How long an error about a worker that has ended waits for the rest of its stderr:
/// its last words may still be in the pipe when its exit is seen (a busy machine can
/// leave the reader thread unscheduled for a while). Bounded, since a process the
/// worker started may hold the pipe open after the worker is gone.
const STDERR_DRAIN: Duration = Duration::from_secs(10);
/// The protocol this cnnbench speaks (the worker's `PROTOCOL`).
const PROTOCOL: u64 = 1;

/// What the worker said or did.
enum Incoming {
    Frame(Value, Vec<u8>),
    /// Its stdout closed, or a frame could not be read.
    Closed(String),
    /// It wrote something that is not a frame, and may still be running: nothing more
    /// it says can be read, so it is ended rather than waited for.
    Garbled(String),
}

/// A reply: its fields and its tensors.
pub struct Reply {
    pub fields: Value,
    pub tensors: Vec<(String, HostTensor)>,
}

/// How the worker is started.
pub struct Launch<'a> {
    /// The engine's name, for messages.
    pub engine: &'static str,
    pub interpreter: &'a Interpreter,
    /// `--heap keep|system`: cnnbench's heap policy, applied before torch loads.
    pub heap: &'a str,
    pub threads: Option<usize>,
    /// Further `--name value` pairs for the worker's start-up (CUDA settings).
    pub settings: Vec<(&'static str, String)>,
}

/// A running worker.
pub struct Worker {
    engine: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Incoming>,
    stderr_tail: Arc<StderrTail>,
    /// What the worker said when it started: versions, threads, devices.
    pub hello: Value,
    /// Once the worker has failed, every later call fails with this.
    failed: Option<String>,
    /// How long one call may take while the worker keeps beating.
    call_limit: Duration,
    /// Silence after which the worker is taken for hung ([`HANG_TIMEOUT`]; tests shorten it).
    hang_timeout: Duration,
    /// The folder the worker's source was written to, removed with the worker.
    _source: tempfile::TempDir,
}

/// The per-call limit `CNNBENCH_WORKER_CALL_LIMIT_S` gives (`value`), or why it gives
/// none: a positive number of seconds up to a year.
pub fn call_limit_of(value: Option<&str>) -> Result<Duration> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_CALL_LIMIT);
    };
    match value.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 365.0 * 86_400.0 => {
            Ok(Duration::from_secs_f64(s))
        }
        _ => Err(anyhow!(
            "{CALL_LIMIT_VARIABLE}={} is not a number of seconds between 0 and a year: set it to the longest one call to the PyTorch worker may take (default {}), or unset it",
            printable_line(value),
            DEFAULT_CALL_LIMIT.as_secs()
        )),
    }
}

impl Worker {
    /// Starts the worker and waits for its greeting; refuses a Python without torch or
    /// with another release than [`crate::TORCH_VERSION`]'s.
    pub fn start(launch: &Launch) -> Result<Worker> {
        let engine = launch.engine;
        let python = &launch.interpreter.path;
        let call_limit = call_limit_of(std::env::var(CALL_LIMIT_VARIABLE).ok().as_deref())?;
        let source = tempfile::Builder::new()
            .prefix("cnnbench-worker-")
            .tempdir()
            .context("cannot make a folder for the PyTorch worker's source")?;
        let script = source.path().join("cnnbench_worker.py");
        std::fs::write(&script, crate::WORKER_SOURCE)
            .with_context(|| format!("cannot write {}", script.display()))?;
        let mut command = Command::new(python);
        command.arg("-B").arg(&script).args(["--heap", launch.heap]);
        if let Some(n) = launch.threads {
            command.args(["--threads", &n.to_string()]);
        }
        for (name, value) in &launch.settings {
            command.arg(format!("--{name}")).arg(value);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| {
            anyhow!(
                "{engine} cannot start its worker: the Python {} (from {}) cannot be run ({e}); install Python 3 with torch {}, or pass --python PATH",
                python.display(),
                launch.interpreter.origin(),
                crate::TORCH_VERSION
            )
        })?;
        let stdout = child.stdout.take().context("the worker has no stdout")?;
        let stderr = child.stderr.take().context("the worker has no stderr")?;
        let stderr_tail = Arc::new(StderrTail::default());
        keep_tail(stderr, stderr_tail.clone());
        let incoming = read_frames(stdout);
        let mut worker = Worker {
            engine,
            stdin: child.stdin.take(),
            child,
            incoming,
            stderr_tail,
            hello: Value::Null,
            failed: None,
            call_limit,
            hang_timeout: HANG_TIMEOUT,
            _source: source,
        };
        let hello = match worker.incoming.recv_timeout(START_TIMEOUT) {
            Ok(Incoming::Frame(header, _)) => header,
            Ok(Incoming::Closed(why)) => {
                return Err(anyhow!(worker.ended("starting", &why)));
            }
            Ok(Incoming::Garbled(what)) => {
                worker.stop();
                return Err(worker.fail("starting", &format!("{what}; it was killed")));
            }
            Err(_) => {
                worker.stop();
                return Err(anyhow!(
                    "{engine}'s worker on {} did not start within {} s (importing torch); it was stopped{}",
                    python.display(),
                    START_TIMEOUT.as_secs(),
                    worker.stderr_lines()
                ));
            }
        };
        match hello["type"].as_str() {
            Some("hello") => {}
            Some("fatal") => {
                return Err(anyhow!(
                    "{engine}: the Python {} (from {}) cannot import torch ({}); {}",
                    python.display(),
                    launch.interpreter.origin(),
                    hello["error"].as_str().unwrap_or("no reason given"),
                    install_hint(python)
                ));
            }
            _ => {
                return Err(anyhow!(
                    "{engine}'s worker greeted with {hello}, not a hello"
                ))
            }
        }
        if hello["protocol"].as_u64() != Some(PROTOCOL) {
            return Err(anyhow!(
                "{engine}'s worker speaks protocol {}, this cnnbench {PROTOCOL}: the worker's source and the binary differ",
                hello["protocol"]
            ));
        }
        let version = hello["torch"].as_str().unwrap_or("unknown");
        if !same_release(version, crate::TORCH_VERSION) {
            return Err(anyhow!(
                "{engine}: the Python {} (from {}) has torch {version}, but cnnbench's pytorch engines are tested with {}; {}",
                python.display(),
                launch.interpreter.origin(),
                crate::TORCH_VERSION,
                install_hint(python)
            ));
        }
        worker.hello = hello;
        Ok(worker)
    }

    /// Sets the per-call limit (tests; users set `CNNBENCH_WORKER_CALL_LIMIT_S`).
    #[cfg(test)]
    pub fn set_call_limit(&mut self, limit: Duration) {
        self.call_limit = limit;
    }

    /// Sets the silence taken for a hang (tests, which need not wait [`HANG_TIMEOUT`]).
    #[cfg(test)]
    pub fn set_hang_timeout(&mut self, timeout: Duration) {
        self.hang_timeout = timeout;
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `cmd` with `fields` and `tensors`, and waits for the answer.
    pub fn call(
        &mut self,
        cmd: &str,
        fields: Value,
        tensors: &[(&str, &HostTensor)],
    ) -> Result<Reply> {
        if let Some(why) = &self.failed {
            return Err(anyhow!("{why}"));
        }
        let mut header = match fields {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(anyhow!(
                    "a worker request's fields must be an object, not {other}"
                ))
            }
        };
        header.insert("cmd".into(), json!(cmd));
        let mut payload = Vec::new();
        if !tensors.is_empty() {
            let specs: Vec<Value> = tensors
                .iter()
                .map(|(key, t)| json!({"key": key, "shape": t.shape}))
                .collect();
            header.insert("tensors".into(), Value::Array(specs));
            for (_, t) in tensors {
                payload.reserve(t.data.len() * 4);
                for v in &t.data {
                    payload.extend_from_slice(&v.to_le_bytes());
                }
            }
            header.insert("bytes".into(), json!(payload.len()));
        }
        let mut line = Value::Object(header).to_string();
        line.push('\n');
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin
                .write_all(line.as_bytes())
                .and_then(|_| stdin.write_all(&payload))
                .and_then(|_| stdin.flush()),
            None => Err(std::io::Error::other("its input is closed")),
        };
        if let Err(e) = sent {
            return Err(self.fail(cmd, &format!("cannot write to it ({e})")));
        }
        let asked = Instant::now();
        loop {
            match self.incoming.recv_timeout(self.hang_timeout) {
                Ok(Incoming::Frame(header, body)) => match header["type"].as_str() {
                    Some("heartbeat") if asked.elapsed() > self.call_limit => {
                        self.stop();
                        return Err(self.fail(
                            cmd,
                            &format!(
                                "it kept beating but gave no answer for {} s (a deadlock in native code?) and was killed; if the call is that long, raise {CALL_LIMIT_VARIABLE}",
                                self.call_limit.as_secs_f64()
                            ),
                        ));
                    }
                    Some("heartbeat") => continue,
                    Some("reply") => return self.reply(cmd, header, body),
                    _ => return Err(self.fail(cmd, &format!("it sent {header}"))),
                },
                Ok(Incoming::Closed(why)) => {
                    let message = self.ended(cmd, &why);
                    self.failed = Some(message.clone());
                    return Err(anyhow!(message));
                }
                Ok(Incoming::Garbled(what)) => {
                    self.stop();
                    return Err(self.fail(cmd, &format!("{what}; it was killed")));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.stop();
                    return Err(self.fail(
                        cmd,
                        &format!(
                            "it stopped answering (no word for {} s) and was killed",
                            self.hang_timeout.as_secs_f64()
                        ),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.fail(cmd, "its output reader stopped"));
                }
            }
        }
    }

    fn reply(&mut self, cmd: &str, header: Value, body: Vec<u8>) -> Result<Reply> {
        if header["ok"].as_bool() != Some(true) {
            let error = header["error"]
                .as_str()
                .unwrap_or("an error without a message");
            // The innermost frame says where in PyTorch it happened.
            let place = header["traceback"]
                .as_array()
                .and_then(|lines| {
                    lines
                        .iter()
                        .filter_map(Value::as_str)
                        .rfind(|l| l.trim_start().starts_with("File "))
                })
                .map(|l| format!(" (at {})", l.trim()))
                .unwrap_or_default();
            return Err(anyhow!("PyTorch failed in '{cmd}': {error}{place}"));
        }
        let mut tensors = Vec::new();
        let mut offset = 0usize;
        for spec in header["tensors"].as_array().into_iter().flatten() {
            let key = spec["key"].as_str().unwrap_or_default().to_string();
            let shape: Vec<usize> = spec["shape"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_u64().map(|d| d as usize))
                .collect();
            let n: usize = shape.iter().product();
            let bytes = body
                .get(offset..offset + 4 * n)
                .with_context(|| format!("the worker's '{cmd}' reply is short of tensor {key}"))?;
            let data = bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            offset += 4 * n;
            tensors.push((key, HostTensor::new(shape, data)?));
        }
        Ok(Reply {
            fields: header,
            tensors,
        })
    }

    /// Marks the worker failed with a message naming the engine and the request.
    fn fail(&mut self, cmd: &str, what: &str) -> anyhow::Error {
        let last_words = self.stderr_lines();
        let message = format!(
            "{}'s worker (pid {}) failed during '{cmd}': {what}{last_words}",
            self.engine,
            self.child.id(),
        );
        self.failed = Some(message.clone());
        anyhow!(message)
    }

    /// The message for a worker whose output closed: how it ended, and its last words.
    fn ended(&mut self, cmd: &str, why: &str) -> String {
        // Its exit status arrives a moment after its output closes (on a busy machine,
        // seconds after).
        let mut status = None;
        for _ in 0..250 {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let how = match status {
            Some(s) if why == END_OF_OUTPUT => format!("exited ({s})"),
            Some(s) => format!("exited ({s}); {why}"),
            None => format!("closed its output ({why})"),
        };
        let last_words = self.stderr_lines();
        format!(
            "{}'s worker (pid {}) {how} during '{cmd}'{last_words}",
            self.engine,
            self.child.id(),
        )
    }

    /// Ends the worker and reaps it, so that its end is known to [`Worker::stderr_lines`].
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// "; its last lines on stderr: …", or nothing when it wrote none. Once the worker
    /// has ended, every line it wrote is read first (up to [`STDERR_DRAIN`]): the line
    /// that says why it died is often its last.
    fn stderr_lines(&mut self) -> String {
        let ended = !matches!(self.child.try_wait(), Ok(None));
        let wait = if ended {
            STDERR_DRAIN
        } else {
            // Still running: what it wrote so far, after a moment for the reader.
            Duration::from_millis(50)
        };
        let lines = self.stderr_tail.lines_once_ended(wait);
        if lines.is_empty() {
            return String::new();
        }
        format!("; its last lines on stderr:\n  {}", lines.join("\n  "))
    }
}

/// The last [`STDERR_LINES`] lines of the worker's stderr, and whether the reader has
/// reached the stream's end (every line the worker wrote is then here).
#[derive(Default)]
struct StderrTail {
    state: Mutex<TailState>,
    changed: Condvar,
}

#[derive(Default)]
struct TailState {
    lines: VecDeque<String>,
    ended: bool,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.lines.len() == STDERR_LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    fn end(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
        self.changed.notify_all();
    }

    /// The lines kept, once the stream has ended or `wait` has passed.
    fn lines_once_ended(&self, wait: Duration) -> Vec<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (state, _) = self
            .changed
            .wait_timeout_while(state, wait, |s| !s.ended)
            .unwrap_or_else(|e| e.into_inner());
        state.lines.iter().cloned().collect()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // A worker that has ended is not written to: its pipe has no reader (with SIGPIPE
        // at its default action that write ended cnnbench, status 141, before its error
        // was printed; cnnbench ignores SIGPIPE, and this check spares the write).
        let running = matches!(self.child.try_wait(), Ok(None));
        if self.failed.is_none() && running {
            if let Some(stdin) = self.stdin.as_mut() {
                let _ = stdin.write_all(b"{\"cmd\": \"exit\"}\n");
                let _ = stdin.flush();
            }
        }
        self.stdin = None;
        // A working worker is given 2 s to leave on its own; a failed one (it said
        // something that is not a frame, fell silent, refused its torch) is ended at once.
        let grace = if self.failed.is_none() { 100 } else { 0 };
        for _ in 0..grace {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `version` (`2.11.0+cu130`) is the release of `tested` (`2.11.0`): the same
/// major and minor.
pub fn same_release(version: &str, tested: &str) -> bool {
    let release =
        |v: &str| -> Vec<String> { v.split(['.', '+']).take(2).map(str::to_string).collect() };
    release(version) == release(tested)
}

/// Reads frames on a thread of their own, so that waiting for one can time out.
fn read_frames(stdout: impl Read + Send + 'static) -> Receiver<Incoming> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        // What a Python prints on stdout as it starts (a `sitecustomize` or `.pth`
        // banner), before the worker takes stdout for itself: skipped, and said if no
        // greeting follows.
        let mut before_greeting: Vec<String> = Vec::new();
        let mut greeted = false;
        loop {
            let incoming = match read_frame(&mut reader) {
                FrameRead::Frame(header, body) => {
                    greeted = true;
                    Incoming::Frame(header, body)
                }
                FrameRead::NotAFrame { line, .. }
                    if !greeted && before_greeting.len() < BANNER_LINES =>
                {
                    before_greeting.push(line);
                    continue;
                }
                FrameRead::NotAFrame { line, why } => Incoming::Garbled(format!(
                    "it wrote a line that is not a frame ({why}): {line}"
                )),
                FrameRead::Closed(why) if !greeted && !before_greeting.is_empty() => {
                    Incoming::Closed(format!(
                        "{why}; before any frame it printed on its standard output: {}",
                        before_greeting.join(" | ")
                    ))
                }
                FrameRead::Closed(why) => Incoming::Closed(why),
            };
            let closed = matches!(incoming, Incoming::Closed(_) | Incoming::Garbled(_));
            if send.send(incoming).is_err() || closed {
                return;
            }
        }
    });
    receive
}

/// Why the worker's output closed when it simply ended.
const END_OF_OUTPUT: &str = "end of output";

/// Lines a Python may print on stdout before the worker's greeting (a banner) that are
/// skipped; more, and the stream is taken for broken.
const BANNER_LINES: usize = 100;

/// What one read of the worker's output gave.
enum FrameRead {
    Frame(Value, Vec<u8>),
    /// A line that is not a frame (shown short and printable), and why: skipped before
    /// the greeting, fatal after it.
    NotAFrame {
        line: String,
        why: String,
    },
    /// The output ended or cannot be read on, and why.
    Closed(String),
}

/// The longest header line read: ours are a few kilobytes (a reply lists its tensors'
/// shapes); a worker writing without a newline must not fill memory.
const MAX_HEADER_BYTES: u64 = 16 << 20;

/// Reads one frame: a header line (a JSON object) and the bytes it announces. A line
/// that is not a JSON object is [`FrameRead::NotAFrame`]; anything else (no newline
/// within [`MAX_HEADER_BYTES`], a `bytes` that is not a count, above [`MAX_FRAME_BYTES`]
/// or more than memory can hold) closes the stream with the reason.
fn read_frame(reader: &mut impl BufRead) -> FrameRead {
    let mut line = Vec::new();
    match reader
        .by_ref()
        .take(MAX_HEADER_BYTES)
        .read_until(b'\n', &mut line)
    {
        Ok(0) => return FrameRead::Closed(END_OF_OUTPUT.into()),
        Err(e) => return FrameRead::Closed(e.to_string()),
        Ok(_) if !line.ends_with(b"\n") && line.len() as u64 == MAX_HEADER_BYTES => {
            return FrameRead::Closed(format!(
                "it wrote a line longer than {} MiB, not a frame",
                MAX_HEADER_BYTES >> 20
            ));
        }
        Ok(_) => {}
    }
    let line = String::from_utf8_lossy(&line);
    let not_a_frame = |why: String| FrameRead::NotAFrame {
        line: printable_line(&line.trim().chars().take(200).collect::<String>()),
        why,
    };
    let header = match serde_json::from_str::<Value>(&line) {
        Ok(header) if header.is_object() => header,
        Ok(other) => return not_a_frame(format!("JSON, but {other} is not an object")),
        Err(e) => return not_a_frame(e.to_string()),
    };
    let size = match header.get("bytes") {
        None => 0,
        Some(bytes) => match bytes.as_u64() {
            Some(size) if size <= MAX_FRAME_BYTES => size,
            Some(size) => {
                return FrameRead::Closed(format!(
                    "it announced a frame of {size} bytes, more than the {} GiB a frame may have",
                    MAX_FRAME_BYTES >> 30
                ))
            }
            None => {
                return FrameRead::Closed(format!(
                    "it announced a frame of {} bytes, not a count",
                    printable_line(&bytes.to_string())
                ))
            }
        },
    };
    let mut body = Vec::new();
    if let Err(e) = body.try_reserve_exact(size as usize) {
        return FrameRead::Closed(format!(
            "it announced a frame of {size} bytes, which memory cannot hold ({e})"
        ));
    }
    match reader.by_ref().take(size).read_to_end(&mut body) {
        Ok(n) if n as u64 == size => FrameRead::Frame(header, body),
        Ok(n) => FrameRead::Closed(format!(
            "a frame ended early (end of output after {n} of {size} bytes)"
        )),
        Err(e) => FrameRead::Closed(format!("a frame ended early ({e})")),
    }
}

/// Keeps the last [`STDERR_LINES`] lines the worker writes to stderr, and says when the
/// stream ends.
fn keep_tail(stderr: impl Read + Send + 'static, tail: Arc<StderrTail>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        // Bytes, not UTF-8 lines: a line that is not UTF-8 is kept (made printable)
        // rather than ending the reading before the worker's last words.
        while let Ok(n) = reader.read_until(b'\n', &mut line) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            tail.push(printable_line(text.trim_end_matches(['\n', '\r'])));
            line.clear();
        }
        tail.end();
    });
}

/// A line of the worker's stderr made safe for a terminal (no escapes reach it).
fn printable_line(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame `bytes` of input give, or why there is none.
    fn frame_of(bytes: &[u8]) -> Result<(Value, Vec<u8>), String> {
        match read_frame(&mut std::io::Cursor::new(bytes)) {
            FrameRead::Frame(header, body) => Ok((header, body)),
            FrameRead::NotAFrame { line, why } => Err(format!("not a frame ({why}): {line}")),
            FrameRead::Closed(why) => Err(why),
        }
    }

    #[test]
    fn a_frame_is_a_header_line_and_the_bytes_it_announces() {
        let (header, body) = frame_of(b"{\"type\": \"reply\", \"bytes\": 3}\nabcdef").unwrap();
        assert_eq!(header["type"], "reply");
        assert_eq!(body, b"abc");
        let (_, body) = frame_of(b"{\"type\": \"heartbeat\"}\n").unwrap();
        assert!(body.is_empty());
    }

    /// A worker announcing 10^12 bytes aborted cnnbench (`vec![0; bytes]`): every size
    /// that is not a count, or is above the limit, is refused before anything is
    /// allocated, and a short body is an error.
    #[test]
    fn a_frame_size_that_is_not_a_plausible_count_is_refused_without_allocating() {
        for (bytes, says) in [
            ("1000000000000", "more than the 64 GiB"),
            ("18446744073709551615", "more than the 64 GiB"),
            ("68719476737", "more than the 64 GiB"),
            ("1e12", "not a count"),
            ("-1", "not a count"),
            ("\"12\"", "not a count"),
            ("null", "not a count"),
            ("[1]", "not a count"),
        ] {
            let input = format!("{{\"type\": \"reply\", \"bytes\": {bytes}}}\n");
            let why = frame_of(input.as_bytes()).unwrap_err();
            assert!(why.contains(says), "{bytes}: {why}");
        }
        let why = frame_of(b"{\"type\": \"reply\", \"bytes\": 100}\nshort").unwrap_err();
        assert!(why.contains("after 5 of 100 bytes"), "{why}");
    }

    #[test]
    fn a_line_that_is_not_a_frame_is_shown_short_and_printable() {
        let why = frame_of(b"Python 3.12 banner \x1b]0;title\x07\n").unwrap_err();
        assert!(
            why.contains("not a frame") && !why.contains('\u{1b}'),
            "{why}"
        );
        let endless = vec![b'x'; (MAX_HEADER_BYTES + 10) as usize];
        let why = frame_of(&endless).unwrap_err();
        assert!(why.contains("longer than 16 MiB"), "{why}");
        assert!(frame_of(b"").unwrap_err().contains("end of output"));
    }

    /// The frame reader against what a broken or hostile worker may write: valid frames
    /// with bytes flipped, cut short, repeated or given hostile sizes. Every input gives
    /// a frame or a reason, at once, and a frame's body is what its header announced.
    #[test]
    fn mutated_frames_give_a_frame_or_a_reason_never_a_panic() {
        let seeds: [&[u8]; 4] = [
            b"{\"type\": \"reply\", \"ok\": true, \"bytes\": 8, \"tensors\": [{\"key\": \"o\", \"shape\": [2]}]}\n\x00\x00\x80?\x00\x00\x00@",
            b"{\"type\": \"heartbeat\"}\n",
            b"{\"type\": \"hello\", \"protocol\": 1, \"torch\": \"2.11.0\"}\n",
            b"{\"type\": \"reply\", \"ok\": false, \"error\": \"x\", \"bytes\": 0}\n",
        ];
        let tokens: [&[u8]; 8] = [
            b"{\"bytes\": 1000000000000}\n",
            b"1e308",
            b"18446744073709551615",
            b"-1",
            b"99999999999999999999999",
            b"[[[[[[[[",
            b"\n",
            b"\"bytes\": 68719476737, ",
        ];
        // xorshift64*: deterministic, so a failure is reproduced by its case number.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for case in 0..4000 {
            let mut input = seeds[case % seeds.len()].to_vec();
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % (input.len() + 1);
                match next() % 4 {
                    0 if at < input.len() => input[at] ^= 1 << (next() % 8),
                    1 => input.truncate(at),
                    2 => {
                        let token = tokens[(next() as usize) % tokens.len()];
                        input.splice(at..at, token.iter().copied());
                    }
                    _ => {
                        let piece = input[at..].to_vec();
                        input.extend_from_slice(&piece);
                    }
                }
            }
            if let Ok((header, body)) = frame_of(&input) {
                let announced = header.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                assert_eq!(body.len() as u64, announced, "case {case}: {input:?}");
            }
        }
    }

    #[test]
    fn the_call_limit_variable_is_seconds_up_to_a_year() {
        assert_eq!(call_limit_of(None).unwrap(), DEFAULT_CALL_LIMIT);
        assert_eq!(call_limit_of(Some(" ")).unwrap(), DEFAULT_CALL_LIMIT);
        assert_eq!(call_limit_of(Some("90")).unwrap(), Duration::from_secs(90));
        assert_eq!(
            call_limit_of(Some("0.5")).unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["0", "-1", "inf", "NaN", "1e300", "ten", "\u{1b}[2J"] {
            let why = call_limit_of(Some(bad)).unwrap_err().to_string();
            assert!(
                why.contains(CALL_LIMIT_VARIABLE) && !why.contains('\u{1b}'),
                "{bad}: {why}"
            );
        }
    }

    #[test]
    fn a_release_is_major_and_minor() {
        assert!(same_release("2.11.0+cu130", "2.11.0"));
        assert!(same_release("2.11.1", "2.11.0"));
        assert!(same_release("2.11.0+cpu", "2.11.0"));
        assert!(!same_release("2.10.0", "2.11.0"));
        assert!(!same_release("2.1.0", "2.11.0"));
        assert!(!same_release("unknown", "2.11.0"));
    }
}
