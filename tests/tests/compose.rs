//! `docker-compose.yml` stays valid: these machines have no Docker engine to run it, so the
//! file is checked by the Compose tool itself (`docker-compose config`, which needs no
//! engine), its services are the documented topology, and every `svc` command in it is one
//! the binary accepts.

use std::collections::BTreeMap;
use std::process::Command;

use tests::{svc_bin, workspace_root};

/// `docker-compose config` on the project's file: the resolved file, or a failure that says
/// how to get the tool.
fn resolved_config() -> String {
    let out =
        Command::new("docker-compose").args(["-f", "docker-compose.yml", "config"]).current_dir(workspace_root()).output().unwrap_or_else(
            |e| panic!("this test needs the Compose tool to validate docker-compose.yml ({e}): `apt-get install docker-compose`"),
        );
    assert!(out.status.success(), "docker-compose.yml is invalid: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The `command:` list of every service of the resolved file.
fn commands(config: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let (mut service, mut in_command) = (None::<String>, false);
    for line in config.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim();
        if indent == 2 && text.ends_with(':') && !line.starts_with("  -") {
            service = Some(text.trim_end_matches(':').to_owned());
            in_command = false;
        } else if indent == 4 && text == "command:" {
            in_command = true;
        } else if in_command && text.starts_with("- ") {
            let arg = text[2..].trim_matches('\'').to_owned();
            out.entry(service.clone().unwrap()).or_insert_with(Vec::new).push(arg);
        } else if indent <= 4 {
            in_command = false;
        }
        if indent == 0 && text != "services:" {
            service = None;
        }
    }
    out
}

#[test]
fn the_compose_file_is_valid_and_runs_the_documented_topology() {
    let config = resolved_config();
    let commands = commands(&config);
    for service in ["kafka", "scylla"] {
        assert!(config.contains(&format!("\n  {service}:\n")), "no {service} service:\n{config}");
    }
    let roles: BTreeMap<&str, &str> = commands.iter().filter_map(|(s, c)| c.first().map(|role| (s.as_str(), role.as_str()))).collect();
    let expected = [("ingest", "ingest"), ("project-1", "project"), ("project-2", "project"), ("serve-1", "serve"), ("serve-2", "serve")];
    for (service, role) in expected {
        assert_eq!(roles.get(service), Some(&role), "service {service} runs `svc {role}`: {commands:?}");
    }
    assert!(config.contains("SVC_LOG: kafka://kafka:9092") && config.contains("SVC_STORE: scylla://scylla:9042/svc"), "{config}");
    for (service, args) in commands.iter().filter(|(s, _)| expected.iter().any(|(e, _)| e == s)) {
        let out = Command::new(svc_bin()).args(args).arg("--help").output().unwrap();
        assert!(out.status.success(), "{service}: `svc {}` is refused: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
}
