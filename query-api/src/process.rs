//! The process's own figures from `/proc/self/status` (Linux; none elsewhere).

/// `/proc/self/status`, read once.
pub struct ProcessStatus(String);

impl ProcessStatus {
    /// Reads it now (empty where there is none).
    pub fn read() -> ProcessStatus {
        ProcessStatus(std::fs::read_to_string("/proc/self/status").unwrap_or_default())
    }

    /// The number a field holds (`VmRSS:` in kB, `Threads:` as a count), if the field is there.
    pub fn field(&self, name: &str) -> Option<u64> {
        self.0.lines().find_map(|l| l.strip_prefix(name))?.trim().trim_end_matches("kB").trim().parse().ok()
    }

    /// The resident set in bytes.
    pub fn resident_bytes(&self) -> Option<u64> {
        self.field("VmRSS:").map(|kb| kb * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::ProcessStatus;

    #[test]
    fn fields_are_read_as_numbers() {
        let status = ProcessStatus("Name:\tsvc\nVmRSS:\t  2048 kB\nThreads:\t7\n".into());
        assert_eq!((status.resident_bytes(), status.field("Threads:"), status.field("VmSize:")), (Some(2_097_152), Some(7), None));
    }
}
