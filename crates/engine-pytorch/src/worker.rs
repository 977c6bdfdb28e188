//! The worker process and its pipe. A frame is one line of JSON and, when the line says
//! `bytes`, that many raw bytes (tensors as little-endian f32, in the order of the
//! line's `tensors`). The worker beats every 0.25 s while it works, so a worker that
//! has died or hung is told apart from one that is computing: silence for
//! [`HANG_TIMEOUT`] ends it, and the error names the engine, what it was asked, and its
//! last lines on stderr.

use crate::python::{install_hint, Interpreter};
use anyhow::{anyhow, Context, Result};
use cnnbench_graph::HostTensor;
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Silence after which a working worker is taken for hung (it beats 60 times in it).
pub const HANG_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the worker may take to start and import torch (a cold disk is slow).
pub const START_TIMEOUT: Duration = Duration::from_secs(180);
/// Lines of the worker's stderr kept for error messages.
const STDERR_LINES: usize = 30;
/// The protocol this cnnbench speaks (the worker's `PROTOCOL`).
const PROTOCOL: u64 = 1;

/// What the worker said or did.
enum Incoming {
    Frame(Value, Vec<u8>),
    /// Its stdout closed, or a frame could not be read.
    Closed(String),
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
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// What the worker said when it started: versions, threads, devices.
    pub hello: Value,
    /// Once the worker has failed, every later call fails with this.
    failed: Option<String>,
    /// The folder the worker's source was written to, removed with the worker.
    _source: tempfile::TempDir,
}

impl Worker {
    /// Starts the worker and waits for its greeting; refuses a Python without torch or
    /// with another release than [`crate::TORCH_VERSION`]'s.
    pub fn start(launch: &Launch) -> Result<Worker> {
        let engine = launch.engine;
        let python = &launch.interpreter.path;
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
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
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
            _source: source,
        };
        let hello = match worker.incoming.recv_timeout(START_TIMEOUT) {
            Ok(Incoming::Frame(header, _)) => header,
            Ok(Incoming::Closed(why)) => {
                return Err(anyhow!(worker.ended("starting", &why)));
            }
            Err(_) => {
                let _ = worker.child.kill();
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
        loop {
            match self.incoming.recv_timeout(HANG_TIMEOUT) {
                Ok(Incoming::Frame(header, body)) => match header["type"].as_str() {
                    Some("heartbeat") => continue,
                    Some("reply") => return self.reply(cmd, header, body),
                    _ => return Err(self.fail(cmd, &format!("it sent {header}"))),
                },
                Ok(Incoming::Closed(why)) => {
                    let message = self.ended(cmd, &why);
                    self.failed = Some(message.clone());
                    return Err(anyhow!(message));
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(self.fail(
                        cmd,
                        &format!(
                            "it stopped answering (no word for {} s) and was killed",
                            HANG_TIMEOUT.as_secs()
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
        let message = format!(
            "{}'s worker (pid {}) failed during '{cmd}': {what}{}",
            self.engine,
            self.child.id(),
            self.stderr_lines()
        );
        self.failed = Some(message.clone());
        anyhow!(message)
    }

    /// The message for a worker whose output closed: how it ended, and its last words.
    fn ended(&mut self, cmd: &str, why: &str) -> String {
        // Its exit status arrives a moment after its output closes.
        let mut status = None;
        for _ in 0..50 {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let how = match status {
            Some(s) => format!("exited ({s})"),
            None => format!("closed its output ({why})"),
        };
        format!(
            "{}'s worker (pid {}) {how} during '{cmd}'{}",
            self.engine,
            self.child.id(),
            self.stderr_lines()
        )
    }

    /// "; its last lines on stderr: …", or nothing when it wrote none.
    fn stderr_lines(&self) -> String {
        // The reader thread may still be taking the last lines in.
        std::thread::sleep(Duration::from_millis(50));
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last lines on stderr:\n  {}", lines.join("\n  "))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.failed.is_none() {
            if let Some(stdin) = self.stdin.as_mut() {
                let _ = stdin.write_all(b"{\"cmd\": \"exit\"}\n");
                let _ = stdin.flush();
            }
        }
        self.stdin = None;
        for _ in 0..100 {
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
        loop {
            let mut line = String::new();
            let incoming = match reader.read_line(&mut line) {
                Ok(0) => Incoming::Closed("end of output".into()),
                Err(e) => Incoming::Closed(e.to_string()),
                Ok(_) => match serde_json::from_str::<Value>(&line) {
                    Err(e) => Incoming::Closed(format!(
                        "it wrote a line that is not a frame ({e}): {}",
                        line.trim()
                    )),
                    Ok(header) => {
                        let size = header["bytes"].as_u64().unwrap_or(0) as usize;
                        let mut body = vec![0u8; size];
                        match reader.read_exact(&mut body) {
                            Ok(()) => Incoming::Frame(header, body),
                            Err(e) => Incoming::Closed(format!("a frame ended early ({e})")),
                        }
                    }
                },
            };
            let closed = matches!(incoming, Incoming::Closed(_));
            if send.send(incoming).is_err() || closed {
                return;
            }
        }
    });
    receive
}

/// Keeps the last [`STDERR_LINES`] lines the worker writes to stderr.
fn keep_tail(stderr: impl Read + Send + 'static, tail: Arc<Mutex<VecDeque<String>>>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(printable_line(&line));
        }
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
    use super::same_release;

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
