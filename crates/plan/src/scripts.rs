//! The jobs that run a matrix, one cell per task: a Slurm job array, a Kubernetes
//! Indexed Job, or a shell script for one machine. Each carries the matrix's text, so
//! the cell numbers of a submitted job cannot change when the file is edited later.

use crate::matrix::Matrix;

/// Why a job cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("{what} \"{value}\" cannot go into the job: {why}")]
    BadValue {
        what: &'static str,
        value: String,
        why: &'static str,
    },
}

/// What every task runs: `PROGRAM run --plan MATRIX --cell I --output OUTPUT`.
#[derive(Clone, Debug)]
pub struct JobCommand {
    /// The `cnnbench` program as the nodes find it (a path or a name on their PATH).
    pub program: String,
    /// The results folder as the nodes see it (shared by every node).
    pub output: String,
    /// A label for every result (else each result is labelled with its host's name).
    pub label: Option<String>,
    /// Where the matrix came from, for the job's header comment.
    pub matrix_name: String,
}

/// Settings of the Slurm job array (`sbatch` options).
#[derive(Clone, Debug, Default)]
pub struct SlurmOptions {
    pub job_name: String,
    /// At most this many tasks at once (`--array=0-N%K`).
    pub max_parallel: Option<usize>,
    pub partition: Option<String>,
    pub gres: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: Option<usize>,
    pub mem: Option<String>,
    pub account: Option<String>,
    /// Further `#SBATCH` options as written, e.g. `--qos=high`.
    pub extra: Vec<String>,
}

/// Settings of the Kubernetes Job.
#[derive(Clone, Debug, Default)]
pub struct K8sOptions {
    /// The Job's name (the ConfigMap holding the matrix is `NAME-matrix`).
    pub job_name: String,
    /// The container image holding the `cnnbench` program.
    pub image: String,
    /// The PersistentVolumeClaim mounted at the results folder.
    pub volume_claim: String,
    /// Pods at once (default: every cell at once).
    pub max_parallel: Option<usize>,
    /// CPU request and limit, e.g. `8` or `7500m`.
    pub cpus: Option<String>,
    /// Memory request and limit, e.g. `16Gi`.
    pub memory: Option<String>,
    /// `nvidia.com/gpu` limit.
    pub gpus: Option<usize>,
}

/// The delimiter of the here-document that carries the matrix in the shell scripts.
const HEREDOC_END: &str = "CNNBENCH_MATRIX";

/// A word for bash: single-quoted unless it is plainly safe.
fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The lines that write the matrix to a temporary file `$matrix`, removed on exit.
fn matrix_heredoc(matrix: &Matrix) -> Result<String, ScriptError> {
    if matrix.text.lines().any(|l| l.trim() == HEREDOC_END) {
        return Err(ScriptError::BadValue {
            what: "the matrix file",
            value: HEREDOC_END.into(),
            why: "a line of it is the here-document's end marker; remove that line",
        });
    }
    let mut text = matrix.text.clone();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(format!(
        "matrix=\"$(mktemp)\"\ntrap 'rm -f \"$matrix\"' EXIT\ncat > \"$matrix\" <<'{HEREDOC_END}'\n{text}{HEREDOC_END}\n"
    ))
}

/// `PROGRAM [--allocator P] run --plan "$matrix" --cell CELL --output OUT [--label L]`:
/// the heap policy a matrix names is set when cnnbench starts, so it comes first.
fn run_line(matrix: &Matrix, job: &JobCommand, cell: &str) -> String {
    let allocator = matrix.allocator.as_ref().map_or(String::new(), |p| {
        format!(" --allocator {}", shell_quote(p))
    });
    let mut line = format!(
        "{}{allocator} run --plan \"$matrix\" --cell {cell} --output {}",
        shell_quote(&job.program),
        shell_quote(&job.output)
    );
    if let Some(l) = &job.label {
        line.push_str(&format!(" --label {}", shell_quote(l)));
    }
    line
}

fn one_line(what: &'static str, value: &str) -> Result<(), ScriptError> {
    if value.contains(['\n', '\r']) || value.trim().is_empty() {
        return Err(ScriptError::BadValue {
            what,
            value: value.into(),
            why: "it must be one non-empty line",
        });
    }
    Ok(())
}

/// An `sbatch` script: a job array with one task per cell.
pub fn slurm_script(
    matrix: &Matrix,
    job: &JobCommand,
    slurm: &SlurmOptions,
) -> Result<String, ScriptError> {
    let n = matrix.cells.len();
    let mut array = format!("0-{}", n - 1);
    if let Some(k) = slurm.max_parallel {
        if k == 0 {
            return Err(ScriptError::BadValue {
                what: "the number of tasks at once",
                value: "0".into(),
                why: "it must be at least 1",
            });
        }
        array.push_str(&format!("%{k}"));
    }
    let mut directives = vec![
        format!("--job-name={}", slurm.job_name),
        format!("--array={array}"),
        "--output=slurm-%A_%a.out".to_string(),
    ];
    let named = [
        ("partition", &slurm.partition),
        ("gres", &slurm.gres),
        ("time", &slurm.time),
        ("mem", &slurm.mem),
        ("account", &slurm.account),
    ];
    for (key, value) in named {
        if let Some(v) = value {
            one_line("a Slurm option", v)?;
            directives.push(format!("--{key}={v}"));
        }
    }
    if let Some(c) = slurm.cpus_per_task {
        directives.push(format!("--cpus-per-task={c}"));
    }
    for extra in &slurm.extra {
        one_line("a Slurm option", extra)?;
        directives.push(extra.clone());
    }
    one_line("the job name", &slurm.job_name)?;
    let mut s = String::from("#!/bin/bash\n");
    for d in &directives {
        s.push_str(&format!("#SBATCH {d}\n"));
    }
    s.push_str(&format!(
        "# cnnbench plan: the {n} cells of {} as a Slurm job array, one cell per task.\n\
         # Submit with `sbatch THIS_FILE`; results go to {} (one folder per host and engine).\n\
         # A cell that already has a result there is skipped: resubmit to retry failed cells.\n\
         set -euo pipefail\n",
        in_comment(&job.matrix_name),
        in_comment(&job.output)
    ));
    s.push_str(&matrix_heredoc(matrix)?);
    s.push_str(&run_line(matrix, job, "\"$SLURM_ARRAY_TASK_ID\""));
    s.push('\n');
    Ok(s)
}

/// A script that runs every cell on this machine, one after the other; it goes on past
/// a failed cell and names the failures at the end.
pub fn shell_script(matrix: &Matrix, job: &JobCommand) -> Result<String, ScriptError> {
    let n = matrix.cells.len();
    let mut s = format!(
        "#!/bin/bash\n\
         # cnnbench plan: the {n} cells of {} one after the other on this machine.\n\
         # Results go to {}; a cell that already has a result there is skipped.\n\
         set -uo pipefail\n",
        in_comment(&job.matrix_name),
        in_comment(&job.output)
    );
    s.push_str(&matrix_heredoc(matrix)?);
    s.push_str(&format!(
        "failed=()\n\
         for cell in $(seq 0 {last}); do\n\
         \x20   {run}\n\
         \x20   status=$?\n\
         \x20   # 130: interrupted (Ctrl-C): stop here, the finished cells are kept.\n\
         \x20   if [ \"$status\" -eq 130 ]; then exit 130; fi\n\
         \x20   if [ \"$status\" -ne 0 ]; then failed+=(\"$cell\"); fi\n\
         done\n\
         if [ ${{#failed[@]}} -gt 0 ]; then\n\
         \x20   echo \"cnnbench plan: cells ${{failed[*]}} failed (above); run this script again to retry them\" >&2\n\
         \x20   exit 1\n\
         fi\n",
        last = n - 1,
        run = run_line(matrix, job, "\"$cell\""),
    ));
    Ok(s)
}

/// Text for a `#` comment line of a script or YAML file: control characters (a newline
/// would end the comment and make the rest a command) are written escaped.
fn in_comment(text: &str) -> String {
    cnnbench_results::printable(text)
}

/// A YAML string: JSON's double-quoted strings are YAML's too, with what JSON leaves raw
/// but acts on YAML 1.1 or a reader (NEL, U+2028, U+2029: line breaks; bidirectional
/// controls) written as `\uXXXX`, which both read as the same character.
fn yaml_str(s: &str) -> String {
    serde_json::Value::String(s.to_string())
        .to_string()
        .chars()
        .map(|c| {
            if cnnbench_results::acts_on_the_text(c) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A Kubernetes name: lower-case letters, digits and '-', starting and ending with a
/// letter or digit, at most 52 characters (so `NAME-matrix` and the pods' names fit).
fn check_k8s_name(name: &str) -> Result<(), ScriptError> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(ScriptError::BadValue {
            what: "the job name",
            value: name.into(),
            why: "Kubernetes names are lower-case letters, digits and '-', at most 52 characters, not starting or ending with '-'",
        })
    }
}

/// A Kubernetes ConfigMap holding the matrix and an Indexed Job with one completion per
/// cell; each pod runs the cell of its `JOB_COMPLETION_INDEX` and writes its result to
/// the volume claim, labelled with the node's name.
pub fn k8s_job(matrix: &Matrix, job: &JobCommand, k8s: &K8sOptions) -> Result<String, ScriptError> {
    check_k8s_name(&k8s.job_name)?;
    one_line("the image", &k8s.image)?;
    one_line("the volume claim", &k8s.volume_claim)?;
    let n = matrix.cells.len();
    let parallelism = match k8s.max_parallel {
        Some(0) => {
            return Err(ScriptError::BadValue {
                what: "the number of pods at once",
                value: "0".into(),
                why: "it must be at least 1",
            })
        }
        Some(k) => k.min(n),
        None => n,
    };
    let name = &k8s.job_name;
    let matrix_name = in_comment(&job.matrix_name);
    let matrix_dir = "/etc/cnnbench";
    let mut command = vec![job.program.clone()];
    if let Some(policy) = &matrix.allocator {
        command.extend(["--allocator".into(), policy.clone()]);
    }
    command.extend([
        "run".into(),
        "--plan".into(),
        format!("{matrix_dir}/matrix.toml"),
        "--output".into(),
        job.output.clone(),
    ]);
    if let Some(l) = &job.label {
        command.extend(["--label".into(), l.clone()]);
    }
    let command: Vec<String> = command.iter().map(|c| yaml_str(c)).collect();
    let mut resources = Vec::new();
    if let Some(c) = &k8s.cpus {
        one_line("the CPUs", c)?;
        resources.push(format!("cpu: {}", yaml_str(c)));
    }
    if let Some(m) = &k8s.memory {
        one_line("the memory", m)?;
        resources.push(format!("memory: {}", yaml_str(m)));
    }
    let requests = resources.clone();
    if let Some(g) = k8s.gpus {
        resources.push(format!("nvidia.com/gpu: {g}"));
    }
    let mut res = String::new();
    if !resources.is_empty() {
        res.push_str("          resources:\n");
        if !requests.is_empty() {
            res.push_str("            requests:\n");
            for r in &requests {
                res.push_str(&format!("              {r}\n"));
            }
        }
        res.push_str("            limits:\n");
        for r in &resources {
            res.push_str(&format!("              {r}\n"));
        }
    }
    let mut text = String::new();
    for line in matrix.text.lines() {
        if line.is_empty() {
            text.push('\n');
        } else {
            text.push_str(&format!("    {line}\n"));
        }
    }
    Ok(format!(
        "# cnnbench plan: the {n} cells of {matrix_name} as a Kubernetes Indexed Job, one cell per pod.\n\
         # Apply with `kubectl apply -f THIS_FILE`; results go to the volume claim {claim}\n\
         # (one folder per node and engine). A cell that already has a result there is skipped.\n\
         apiVersion: v1\n\
         kind: ConfigMap\n\
         metadata:\n\
         \x20 name: {name}-matrix\n\
         data:\n\
         \x20 matrix.toml: |2\n\
         {text}\
         ---\n\
         apiVersion: batch/v1\n\
         kind: Job\n\
         metadata:\n\
         \x20 name: {name}\n\
         spec:\n\
         \x20 completionMode: Indexed\n\
         \x20 completions: {n}\n\
         \x20 parallelism: {parallelism}\n\
         \x20 backoffLimit: {n}\n\
         \x20 template:\n\
         \x20   spec:\n\
         \x20     restartPolicy: Never\n\
         \x20     containers:\n\
         \x20       - name: cnnbench\n\
         \x20         image: {image}\n\
         \x20         command: [{command}]\n\
         \x20         env:\n\
         \x20           - name: CNNBENCH_HOST\n\
         \x20             valueFrom:\n\
         \x20               fieldRef:\n\
         \x20                 fieldPath: spec.nodeName\n\
         {res}\
         \x20         volumeMounts:\n\
         \x20           - name: matrix\n\
         \x20             mountPath: {matrix_dir}\n\
         \x20             readOnly: true\n\
         \x20           - name: results\n\
         \x20             mountPath: {output}\n\
         \x20     volumes:\n\
         \x20       - name: matrix\n\
         \x20         configMap:\n\
         \x20           name: {name}-matrix\n\
         \x20       - name: results\n\
         \x20         persistentVolumeClaim:\n\
         \x20           claimName: {claim_q}\n",
        claim = k8s.volume_claim,
        image = yaml_str(&k8s.image),
        command = command.join(", "),
        output = yaml_str(&job.output),
        claim_q = yaml_str(&k8s.volume_claim),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(cells: usize) -> Matrix {
        let batches: Vec<String> = (1..=cells).map(|b| b.to_string()).collect();
        Matrix::parse(
            &format!(
                "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nbatch_sizes = [{}]\n",
                batches.join(", ")
            ),
            &["burn-flex"],
        )
        .unwrap()
    }

    fn job() -> JobCommand {
        JobCommand {
            program: "/opt/cnnbench bin/cnnbench".into(),
            output: "/shared/results".into(),
            label: None,
            matrix_name: "m.toml".into(),
        }
    }

    #[test]
    fn the_slurm_array_covers_every_cell_and_caps_concurrency() {
        let slurm = SlurmOptions {
            job_name: "cnnbench".into(),
            max_parallel: Some(2),
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            extra: vec!["--qos=high".into()],
            ..Default::default()
        };
        let s = slurm_script(&matrix(5), &job(), &slurm).unwrap();
        assert!(s.starts_with("#!/bin/bash\n"));
        assert!(s.contains("#SBATCH --array=0-4%2\n"), "{s}");
        assert!(s.contains("#SBATCH --partition=gpu\n#SBATCH --gres=gpu:1\n"));
        assert!(s.contains("#SBATCH --qos=high\n"));
        // The program's path has a space: quoted.
        assert!(s.contains("'/opt/cnnbench bin/cnnbench' run --plan \"$matrix\" --cell \"$SLURM_ARRAY_TASK_ID\" --output /shared/results\n"), "{s}");
        assert!(s.contains("batch_sizes = [1, 2, 3, 4, 5]\nCNNBENCH_MATRIX\n"));
        let bad = SlurmOptions {
            job_name: "x".into(),
            time: Some("1:00\n#SBATCH --evil".into()),
            ..Default::default()
        };
        assert!(slurm_script(&matrix(1), &job(), &bad).is_err());
    }

    /// A newline in the matrix's file name or the output folder ended the comment line it
    /// was written into, and the rest ran as a command (`touch PWNED`).
    #[test]
    fn names_in_comments_cannot_end_the_comment() {
        let mut j = job();
        j.matrix_name = "m\ntouch PWNED\n.toml".into();
        j.output = "out\rtouch PWNED2".into();
        let k8s = K8sOptions {
            job_name: "bench".into(),
            image: "img".into(),
            volume_claim: "results".into(),
            ..Default::default()
        };
        let slurm = SlurmOptions {
            job_name: "x".into(),
            ..Default::default()
        };
        for text in [
            slurm_script(&matrix(1), &j, &slurm).unwrap(),
            shell_script(&matrix(1), &j).unwrap(),
            k8s_job(&matrix(1), &j, &k8s).unwrap(),
        ] {
            for line in text.lines() {
                assert!(
                    !line.trim_start().starts_with("touch"),
                    "{line:?} in\n{text}"
                );
            }
            // (In the quoted command line a CR is a character of the folder's name.)
            for comment in text.lines().filter(|l| l.starts_with('#')) {
                assert!(!comment.contains('\r'), "{comment:?}");
            }
            assert!(text.contains("m\\ntouch PWNED\\n.toml"), "{text}");
        }
    }

    /// U+2028 (a line break to YAML 1.1) in the matrix file's name started a new line of
    /// the Kubernetes YAML and injected a key; NEL, U+2029 and the bidi controls likewise
    /// act on a reader. None reaches a generated file raw, in a comment or a string.
    #[test]
    fn unicode_line_breaks_and_bidi_controls_never_reach_a_generated_file() {
        let hostile = [
            '\u{85}', '\u{2028}', '\u{2029}', '\u{202e}', '\u{2066}', '\u{200f}',
        ];
        for c in hostile {
            let mut j = job();
            j.matrix_name = format!("m{c}evil: injected{c}.toml");
            j.output = format!("out{c}image: evil");
            let k8s = K8sOptions {
                job_name: "bench".into(),
                image: "img".into(),
                volume_claim: "results".into(),
                ..Default::default()
            };
            let slurm = SlurmOptions {
                job_name: "x".into(),
                ..Default::default()
            };
            let yaml = k8s_job(&matrix(1), &j, &k8s).unwrap();
            assert!(!yaml.contains(c), "{c:?} raw in\n{yaml}");
            // In the scripts, the shell's single quotes keep the folder's name exact (no
            // shell breaks a line at these); the comment lines show it escaped.
            for text in [
                slurm_script(&matrix(1), &j, &slurm).unwrap(),
                shell_script(&matrix(1), &j).unwrap(),
            ] {
                for comment in text.lines().filter(|l| l.starts_with('#')) {
                    assert!(!comment.contains(c), "{c:?} raw in {comment}");
                }
            }
            assert!(
                yaml.contains(&format!("\\u{:04x}", c as u32))
                    || yaml.contains(&c.escape_default().to_string()),
                "{c:?}: {yaml}"
            );
            // Every line of the YAML is a comment, a key, a list item or inside a block.
            assert!(
                !yaml.lines().any(|l| l.trim_start().starts_with("evil:")
                    || l.trim_start().starts_with("image: evil")),
                "{yaml}"
            );
        }
    }

    #[test]
    fn the_shell_script_runs_every_cell_in_turn() {
        let mut j = job();
        j.label = Some("it's mine".into());
        let s = shell_script(&matrix(3), &j).unwrap();
        assert!(s.contains("for cell in $(seq 0 2); do"), "{s}");
        assert!(
            s.contains("--cell \"$cell\" --output /shared/results --label 'it'\\''s mine'"),
            "{s}"
        );
    }

    #[test]
    fn the_kubernetes_job_is_indexed_with_one_completion_per_cell() {
        let k8s = K8sOptions {
            job_name: "bench".into(),
            image: "registry.example/cnnbench:1".into(),
            volume_claim: "results".into(),
            max_parallel: Some(10),
            gpus: Some(1),
            ..Default::default()
        };
        let y = k8s_job(&matrix(4), &job(), &k8s).unwrap();
        assert!(
            y.contains("  completionMode: Indexed\n  completions: 4\n  parallelism: 4\n"),
            "{y}"
        );
        assert!(y.contains("nvidia.com/gpu: 1"));
        assert!(y.contains("    batch_sizes = [1, 2, 3, 4]\n"));
        let bad = K8sOptions {
            job_name: "Bench_1".into(),
            ..k8s
        };
        let e = k8s_job(&matrix(1), &job(), &bad).unwrap_err().to_string();
        assert!(e.contains("Bench_1"), "{e}");
    }

    #[test]
    fn a_matrix_holding_the_end_marker_is_refused() {
        let mut m = matrix(1);
        m.text.push_str("# \nCNNBENCH_MATRIX\n");
        assert!(slurm_script(
            &m,
            &job(),
            &SlurmOptions {
                job_name: "a".into(),
                ..Default::default()
            }
        )
        .is_err());
    }

    /// A matrix's heap policy is the process's, set when cnnbench starts: every job
    /// starts cnnbench with it; without one, the command is as it was.
    #[test]
    fn the_jobs_start_cnnbench_under_the_matrixs_heap_policy() {
        let text = "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nallocator = \"system\"\n";
        let m = Matrix::parse(text, &["burn-flex"]).unwrap();
        let program = "'/opt/cnnbench bin/cnnbench' --allocator system run --plan";
        let shell = shell_script(&m, &job()).unwrap();
        assert!(shell.contains(program), "{shell}");
        let slurm_options = SlurmOptions {
            job_name: "bench".into(),
            ..Default::default()
        };
        let slurm = slurm_script(&m, &job(), &slurm_options).unwrap();
        assert!(slurm.contains(program), "{slurm}");
        let k8s = K8sOptions {
            job_name: "bench".into(),
            image: "registry.example/cnnbench:1".into(),
            volume_claim: "results".into(),
            ..Default::default()
        };
        let y = k8s_job(&m, &job(), &k8s).unwrap();
        assert!(
            y.contains("\"/opt/cnnbench bin/cnnbench\", \"--allocator\", \"system\", \"run\""),
            "{y}"
        );
        let plain = shell_script(&matrix(1), &job()).unwrap();
        assert!(!plain.contains("--allocator"), "{plain}");
    }
}
