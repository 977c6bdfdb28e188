//! What else the machine was doing while a benchmark ran: the contention signals Linux
//! offers, read cheaply from `/proc` and `/sys` so that the harness can take a snapshot
//! before and after every timed pass without disturbing it. A shared cloud VM can
//! multiply a time without any other sign; these counters are the signs there are.
//!
//! Every signal is optional: a file the kernel does not offer (no PSI, no cpufreq in a
//! VM, not Linux at all) gives `None`, never an error.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Cumulative counters at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    at: Instant,
    /// `/proc/pressure/cpu`, "some" total: µs during which a runnable task waited.
    cpu_pressure_us: Option<u64>,
    /// `/proc/pressure/memory`, "some" total: µs during which a task stalled on memory.
    memory_pressure_us: Option<u64>,
    /// `/proc/stat`'s first line, in clock ticks summed over all CPUs.
    machine: Option<MachineTicks>,
    /// User + system ticks of each process of cnnbench's tree, by pid.
    own: Vec<(u32, u64)>,
    /// `/proc/vmstat` `pgmajfault`: page faults that had to read from disk, machine-wide.
    major_faults: Option<u64>,
    /// Sum of the CPUs' `thermal_throttle/core_throttle_count`, where the kernel has them.
    throttle_events: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MachineTicks {
    /// user + nice + system + irq + softirq (guest time is inside user).
    busy: u64,
    steal: u64,
    /// Every column but guest: busy, idle, iowait and steal.
    total: u64,
}

/// What happened between two snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    pub seconds: f64,
    /// Share of the wall time during which some runnable task waited for a CPU, percent.
    pub cpu_pressure_pct: Option<f64>,
    /// Share of the wall time during which some task stalled on memory, percent.
    pub memory_pressure_pct: Option<f64>,
    /// Share of the machine's CPU time the hypervisor gave to other guests, percent.
    pub steal_pct: Option<f64>,
    /// Share of the machine's CPU time that processes outside cnnbench's tree used, percent.
    pub other_cpu_pct: Option<f64>,
    /// Clock ticks (all CPUs together) the tick-based shares above rest on.
    pub ticks: Option<u64>,
    pub major_faults: Option<u64>,
    pub throttle_events: Option<u64>,
}

/// Takes snapshots for one process tree: this process and its children, or the tree
/// below a launcher (a rank's parent), as it stands when the sampler is made.
#[derive(Clone, Debug)]
pub struct Sampler {
    family: Vec<u32>,
    /// The CPUs' thermal throttle counters, found once (none in most VMs).
    throttle_counters: Vec<PathBuf>,
}

impl Sampler {
    /// `root`: the process whose tree is cnnbench's own (a data-parallel rank's
    /// launcher, so that the ranks are not each other's neighbours); `None`: this one.
    pub fn new(root: Option<u32>) -> Sampler {
        let me = std::process::id();
        let root = root.unwrap_or(me);
        let mut family = descendants(root);
        if !family.contains(&me) {
            family.push(me);
        }
        Sampler {
            family,
            throttle_counters: cpu_files("thermal_throttle/core_throttle_count"),
        }
    }

    /// The processes whose CPU time counts as cnnbench's own.
    pub fn family(&self) -> &[u32] {
        &self.family
    }

    pub fn snapshot(&self) -> Snapshot {
        let proc = Path::new("/proc");
        Snapshot {
            at: Instant::now(),
            cpu_pressure_us: read(&proc.join("pressure/cpu")).and_then(|s| psi_some_total(&s)),
            memory_pressure_us: read(&proc.join("pressure/memory"))
                .and_then(|s| psi_some_total(&s)),
            machine: read(&proc.join("stat")).and_then(|s| machine_ticks(&s)),
            own: self
                .family
                .iter()
                .filter_map(|&pid| {
                    let stat = read(&proc.join(pid.to_string()).join("stat"))?;
                    Some((pid, process_stat(&stat)?.cpu_ticks))
                })
                .collect(),
            major_faults: read(&proc.join("vmstat")).and_then(|s| vmstat_field(&s, "pgmajfault")),
            throttle_events: self.throttle_events(),
        }
    }

    fn throttle_events(&self) -> Option<u64> {
        let counts = self
            .throttle_counters
            .iter()
            .filter_map(|p| read(p).and_then(|s| s.trim().parse::<u64>().ok()));
        counts.reduce(|a, b| a + b)
    }
}

impl Snapshot {
    /// The signals of the time from `self` to `later`.
    pub fn until(&self, later: &Snapshot) -> Window {
        let seconds = later.at.duration_since(self.at).as_secs_f64();
        let wall_us = seconds * 1e6;
        let share_of_wall = |a: Option<u64>, b: Option<u64>| -> Option<f64> {
            let d = b?.checked_sub(a?)?;
            (wall_us > 0.0).then(|| (d as f64 / wall_us * 100.0).min(100.0))
        };
        let ticks = match (self.machine, later.machine) {
            (Some(a), Some(b)) => Some((
                b.busy.saturating_sub(a.busy),
                b.steal.saturating_sub(a.steal),
                b.total.saturating_sub(a.total),
            )),
            _ => None,
        };
        // Our tree's ticks: only processes seen at both ends (one that ended between
        // them took its count with it).
        let own: u64 = later
            .own
            .iter()
            .filter_map(|(pid, b)| {
                let (_, a) = self.own.iter().find(|(p, _)| p == pid)?;
                Some(b.saturating_sub(*a))
            })
            .sum();
        let share_of_ticks = |part: u64, total: u64| -> Option<f64> {
            (total > 0).then(|| (part as f64 / total as f64 * 100.0).min(100.0))
        };
        Window {
            seconds,
            cpu_pressure_pct: share_of_wall(self.cpu_pressure_us, later.cpu_pressure_us),
            memory_pressure_pct: share_of_wall(self.memory_pressure_us, later.memory_pressure_us),
            steal_pct: ticks.and_then(|(_, steal, total)| share_of_ticks(steal, total)),
            other_cpu_pct: ticks
                .and_then(|(busy, _, total)| share_of_ticks(busy.saturating_sub(own), total)),
            ticks: ticks.map(|(_, _, total)| total),
            major_faults: later
                .major_faults
                .zip(self.major_faults)
                .map(|(b, a)| b.saturating_sub(a)),
            throttle_events: later
                .throttle_events
                .zip(self.throttle_events)
                .map(|(b, a)| b.saturating_sub(a)),
        }
    }
}

/// The lowest and highest current clock of the CPUs in MHz, where cpufreq says (most
/// VMs do not).
pub fn cpu_mhz_range() -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for path in cpu_files("cpufreq/scaling_cur_freq") {
        let Some(khz) = read(&path).and_then(|s| s.trim().parse::<f64>().ok()) else {
            continue;
        };
        let mhz = khz / 1000.0;
        range = Some(match range {
            None => (mhz, mhz),
            Some((lo, hi)) => (lo.min(mhz), hi.max(mhz)),
        });
    }
    range
}

/// `/sys/devices/system/cpu/cpuN/<file>` for every CPU that has it.
fn cpu_files(file: &str) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.len() > 3
                && name.starts_with("cpu")
                && name[3..].chars().all(|c| c.is_ascii_digit())
        })
        .map(|entry| entry.path().join(file))
        .filter(|path| path.exists())
        .collect()
}

/// A small /proc file, whole; `None` when it cannot be read.
fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// The `total=` of the `some` line of a PSI file.
fn psi_some_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

fn machine_ticks(text: &str) -> Option<MachineTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal guest guest_nice
    let busy = at(0) + at(1) + at(2) + at(5) + at(6);
    let steal = at(7);
    Some(MachineTicks {
        busy,
        steal,
        total: busy + at(3) + at(4) + steal,
    })
}

fn vmstat_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The fields of `/proc/PID/stat` the sampler needs.
struct ProcessStat {
    ppid: u32,
    /// utime + stime.
    cpu_ticks: u64,
}

fn process_stat(text: &str) -> Option<ProcessStat> {
    // The command name is in parentheses and may hold spaces or parentheses itself.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcessStat {
        ppid: u32::try_from(field(4)?).ok()?,
        cpu_ticks: field(14)? + field(15)?,
    })
}

/// `root` and every process below it, found by one walk of /proc.
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(stat) = read(&entry.path().join("stat")).and_then(|s| process_stat(&s)) {
                parent_of.push((pid, stat.ppid));
            }
        }
    }
    let mut family = vec![root];
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        for &(pid, ppid) in &parent_of {
            if ppid == parent && !family.contains(&pid) {
                family.push(pid);
            }
        }
        i += 1;
    }
    family
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psi_and_stat_lines_are_parsed() {
        let psi = "some avg10=0.86 avg60=1.57 avg300=0.48 total=1783979\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(psi_some_total(psi), Some(1_783_979));
        assert_eq!(psi_some_total("full total=3\n"), None);
        let stat = "cpu  17597 3 5143 10368 381 7 158 1035 11 0\ncpu0 1 2 3 4\n";
        let t = machine_ticks(stat).unwrap();
        assert_eq!(t.busy, 17597 + 3 + 5143 + 7 + 158);
        assert_eq!(t.steal, 1035);
        assert_eq!(t.total, t.busy + 10368 + 381 + 1035);
        let vm = "pgmajfault 42\npgfault 7\n";
        assert_eq!(vmstat_field(vm, "pgmajfault"), Some(42));
        // A command name with spaces and parentheses.
        let p = "123 (a (b) c) S 77 1 1 0 -1 0 0 0 0 0 250 31 0 0 20 0 1 0 5 0 0";
        let s = process_stat(p).unwrap();
        assert_eq!((s.ppid, s.cpu_ticks), (77, 281));
    }

    #[test]
    fn a_busy_child_is_someone_else_until_it_is_family() {
        // This process's own work counts as its own, not as another process's.
        let sampler = Sampler::new(None);
        assert!(sampler.family().contains(&std::process::id()));
        // Below the parent, this process is family too.
        let parent = std::os::unix::process::parent_id();
        assert!(Sampler::new(Some(parent))
            .family()
            .contains(&std::process::id()));
        let a = sampler.snapshot();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 300 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = sampler.snapshot();
        let w = a.until(&b);
        assert!(w.seconds >= 0.3);
        if let Some(p) = w.cpu_pressure_pct {
            assert!((0.0..=100.0).contains(&p), "{w:?}");
        }
        // Linux has /proc/stat: the tick shares are there and in range.
        let other = w.other_cpu_pct.expect("/proc/stat is readable");
        assert!((0.0..=100.0).contains(&other), "{w:?}");
        assert!(w.ticks.unwrap() > 0);
    }
}
