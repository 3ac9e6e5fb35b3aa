//! Facts about the machine the benchmark ran on, read from the kernel.

use std::path::Path;

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct MachineFacts {
    pub cpus: usize,
    pub arch: &'static str,
    pub kernel: String,
    /// Directory holding the probe file and the databases (canonical).
    pub directory: String,
    pub fs_type: String,
    pub fs_device: String,
    pub mount_point: String,
    pub redodb_version: &'static str,
    /// 1, 5 and 15 minute load averages when the run started: other work on the machine
    /// shows up as noise in the figures.
    pub load_average: Option<[f64; 3]>,
}

pub fn facts(dir: &Path) -> MachineFacts {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mount = std::fs::read_to_string("/proc/mounts").ok().and_then(|text| mount_of(&text, &canonical));
    let (fs_device, mount_point, fs_type) =
        mount.unwrap_or_else(|| ("unknown".into(), "unknown".into(), "unknown".into()));
    MachineFacts {
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        arch: std::env::consts::ARCH,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        directory: canonical.display().to_string(),
        fs_type,
        fs_device,
        mount_point,
        redodb_version: env!("CARGO_PKG_VERSION"),
        load_average: load_average(),
    }
}

/// The 1, 5 and 15 minute load averages from /proc/loadavg.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// The mount holding `path`: (device, mount point, file system type) of the longest
/// mount point that is a prefix of `path` (the last such line wins, as later mounts hide
/// earlier ones at the same place).
fn mount_of(mounts: &str, path: &Path) -> Option<(String, String, String)> {
    let mut best: Option<(usize, (String, String, String))> = None;
    for line in mounts.lines() {
        let mut fields = line.split_whitespace();
        let (Some(device), Some(point), Some(fs)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let point = unescape(point);
        if !path.starts_with(&point) {
            continue;
        }
        let len = Path::new(&point).components().count();
        if best.as_ref().is_none_or(|(l, _)| len >= *l) {
            best = Some((len, (unescape(device), point, fs.to_string())));
        }
    }
    best.map(|(_, m)| m)
}

/// Undoes the octal escapes of /proc/mounts (`\040` for a space and so on).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let (b'\\', Some(d)) = (bytes[i], octal) {
            let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
            out.push(v as u8);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_mount_prefix_wins_and_escapes_are_undone() {
        let mounts = "\
/dev/vda / ext4 rw 0 0
tmpfs /tmp tmpfs rw 0 0
/dev/vdb /tmp/my\\040disk xfs rw 0 0
/dev/vdc /tmpfoo btrfs rw 0 0
";
        let m = |p: &str| mount_of(mounts, Path::new(p)).unwrap();
        assert_eq!(m("/home/x").2, "ext4");
        assert_eq!(m("/tmp/x").2, "tmpfs");
        assert_eq!(m("/tmp/my disk/db"), ("/dev/vdb".into(), "/tmp/my disk".into(), "xfs".into()));
        assert_eq!(m("/tmpfoo").2, "btrfs");
        assert_eq!(m("/tmpfo").2, "ext4");
    }
}
