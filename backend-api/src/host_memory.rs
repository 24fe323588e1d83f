//! Free and total host memory, as the kernel and the process's control group report them.
//!
//! A backend that runs on the host (the CPU backend, a vendor's host fallback) answers
//! [`crate::backend::MemoryPool::memory_info`] with [`host_memory_info`]; a device backend uses it
//! to size what it pins. Inside a container the host's `/proc/meminfo` overstates what the process
//! may use, so the control group's limit (cgroup v2 or v1) caps it.

use crate::backend::MemoryInfo;

/// Free and total host memory: `/proc/meminfo`, capped by the memory limit of the process's
/// control group (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`, the smallest along the
/// hierarchy) so that a container's limit is honoured. Zeros where nothing is readable.
pub fn host_memory_info() -> MemoryInfo {
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let meminfo = read(std::path::Path::new("/proc/meminfo")).unwrap_or_default();
    let mem = parse_meminfo(&meminfo);
    let own = read(std::path::Path::new("/proc/self/cgroup")).unwrap_or_default();
    match cgroup_memory(std::path::Path::new("/sys/fs/cgroup"), &own, &read) {
        Some(cg) => cg.cap(mem),
        None => mem,
    }
}

/// `MemAvailable` and `MemTotal` of a `/proc/meminfo` text, in bytes.
fn parse_meminfo(text: &str) -> MemoryInfo {
    let field = |name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kib| kib.saturating_mul(1024))
            .unwrap_or(0)
    };
    MemoryInfo {
        free: field("MemAvailable:"),
        total: field("MemTotal:"),
        budget: None,
    }
}

/// The memory limit of a control group and what it uses now (reclaimable page cache excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CgroupMemory {
    limit: u64,
    used: u64,
}

impl CgroupMemory {
    /// `mem` with the group's limit applied: total ≤ limit, free ≤ limit − used.
    fn cap(self, mem: MemoryInfo) -> MemoryInfo {
        let free = self.limit.saturating_sub(self.used);
        MemoryInfo {
            total: if mem.total == 0 {
                self.limit
            } else {
                mem.total.min(self.limit)
            },
            free: if mem.total == 0 {
                free
            } else {
                mem.free.min(free)
            },
            budget: mem.budget,
        }
    }
}

/// Limits at or above this are "no limit" (cgroup v1 writes 2^63 rounded down to a page).
const NO_LIMIT: u64 = 1 << 62;

/// The memory limit of the control group in `own` (the text of `/proc/self/cgroup`) under the
/// cgroup mount `root`: the smallest limit from the group up to the root, v2 first, then v1.
/// `None` when no group along the way has a limit. `read` reads a file (injected for tests).
fn cgroup_memory(
    root: &std::path::Path,
    own: &str,
    read: &dyn Fn(&std::path::Path) -> Option<String>,
) -> Option<CgroupMemory> {
    let num = |s: Option<String>| s.and_then(|t| t.trim().parse::<u64>().ok());
    let stat_field = |text: Option<String>, name: &str| -> u64 {
        text.and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
        })
        .unwrap_or(0)
    };
    // (mount folder, group path, limit file, usage file, inactive-file stat key)
    let mut tries: Vec<(std::path::PathBuf, String, &str, &str, &str)> = Vec::new();
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if ctrl.is_empty() {
            for mount in [root.to_path_buf(), root.join("unified")] {
                tries.push((
                    mount,
                    path.to_string(),
                    "memory.max",
                    "memory.current",
                    "inactive_file ",
                ));
            }
        } else if ctrl.split(',').any(|c| c == "memory") {
            tries.push((
                root.join("memory"),
                path.to_string(),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
                "total_inactive_file ",
            ));
        }
    }
    for (mount, path, limit_file, usage_file, inactive) in tries {
        // Inside a container the group's own folder is often mounted as the root: use the
        // longest suffix of the path that exists under the mount.
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let Some(leaf) = (0..=comps.len())
            .map(|skip| comps[skip..].iter().fold(mount.clone(), |p, c| p.join(c)))
            .find(|d| read(&d.join(limit_file)).is_some())
        else {
            continue;
        };
        let mut limit = u64::MAX;
        let mut dir = leaf.clone();
        loop {
            if let Some(l) = num(read(&dir.join(limit_file))) {
                limit = limit.min(l);
            }
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
        if limit >= NO_LIMIT {
            continue;
        }
        let usage = num(read(&leaf.join(usage_file))).unwrap_or(0);
        let cache = stat_field(read(&leaf.join("memory.stat")), inactive);
        return Some(CgroupMemory {
            limit,
            used: usage.saturating_sub(cache),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_fs(files: &[(&str, &str)]) -> impl Fn(&std::path::Path) -> Option<String> {
        let files: Vec<(std::path::PathBuf, String)> = files
            .iter()
            .map(|(p, t)| (std::path::PathBuf::from(p), t.to_string()))
            .collect();
        move |p| files.iter().find(|(f, _)| f == p).map(|(_, t)| t.clone())
    }

    #[test]
    fn cgroup_v2_limit_caps_host_memory() {
        let fs = fake_fs(&[
            ("/cg/job/memory.max", "1073741824\n"),
            ("/cg/job/memory.current", "536870912\n"),
            ("/cg/job/memory.stat", "anon 1\ninactive_file 268435456\n"),
            ("/cg/memory.max", "max\n"),
        ]);
        let cg = cgroup_memory(std::path::Path::new("/cg"), "0::/job\n", &fs).unwrap();
        assert_eq!(cg.limit, 1 << 30);
        assert_eq!(cg.used, (1 << 29) - (1 << 28));
        let host = MemoryInfo {
            free: 16 << 30,
            total: 32 << 30,
            budget: None,
        };
        let m = cg.cap(host);
        assert_eq!(m.total, 1 << 30);
        assert_eq!(m.free, (1 << 30) - (1 << 28));
        // A smaller limit higher up the hierarchy wins.
        let fs = fake_fs(&[
            ("/cg/a/b/memory.max", "max"),
            ("/cg/a/memory.max", "2048"),
            ("/cg/a/b/memory.current", "1024"),
        ]);
        let cg = cgroup_memory(std::path::Path::new("/cg"), "0::/a/b", &fs).unwrap();
        assert_eq!((cg.limit, cg.used), (2048, 1024));
        // No limit anywhere: nothing to apply.
        let fs = fake_fs(&[("/cg/job/memory.max", "max")]);
        assert_eq!(
            cgroup_memory(std::path::Path::new("/cg"), "0::/job", &fs),
            None
        );
    }

    #[test]
    fn cgroup_v1_limit_is_found_when_the_group_is_mounted_as_root() {
        // The group /docker/abc is mounted at the memory controller's root, as in a container.
        let fs = fake_fs(&[
            ("/cg/memory/memory.limit_in_bytes", "4194304"),
            ("/cg/memory/memory.usage_in_bytes", "2097152"),
            (
                "/cg/memory/memory.stat",
                "cache 5\ntotal_inactive_file 1048576\n",
            ),
        ]);
        let own = "12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n";
        let cg = cgroup_memory(std::path::Path::new("/cg"), own, &fs).unwrap();
        assert_eq!((cg.limit, cg.used), (4 << 20, 1 << 20));
        // v1's "unlimited" value is no limit.
        let fs = fake_fs(&[("/cg/memory/memory.limit_in_bytes", "9223372036854771712")]);
        assert_eq!(
            cgroup_memory(std::path::Path::new("/cg"), "4:memory:/", &fs),
            None
        );
    }

    #[test]
    fn meminfo_is_parsed() {
        let m = parse_meminfo("MemTotal:       1000 kB\nMemFree: 5 kB\nMemAvailable:    600 kB\n");
        assert_eq!((m.total, m.free), (1000 * 1024, 600 * 1024));
    }

    #[test]
    fn host_memory_is_reported() {
        let m = host_memory_info();
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(m.total > 0 && m.free <= m.total);
        }
    }
}
