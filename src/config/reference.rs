//! The configuration reference (`docs/configuration.md`), generated from the clap
//! definitions by the tests of this module: every subcommand's flags with their `SVC_*` variable, default and meaning.
//! A test keeps the file equal to what this renders (`SVC_UPDATE_DOCS=1 cargo test -p svc`
//! writes it), and another that every `--flag` the README and docs name exists.

use clap::{Arg, ArgAction, Command};

/// The reference of `cli` as Markdown.
pub fn render(cli: &Command) -> String {
    let mut out = String::from(
        "# Configuration reference\n\n\
         Generated from the command-line definitions (`src/config/`) by `src/config/reference.rs`;\n\
         a test fails when this file and the code differ (`SVC_UPDATE_DOCS=1 cargo test -p svc`\n\
         writes it anew). Every flag is also read from its environment variable; a flag given on\n\
         the command line wins. Lists are comma-separated.\n",
    );
    section(&mut out, "svc", cli);
    out
}

fn section(out: &mut String, path: &str, cmd: &Command) {
    let args: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version").collect();
    if !args.is_empty() || cmd.get_subcommands().next().is_none() {
        out.push_str(&format!("\n## `{path}`\n\n"));
        if let Some(about) = cmd.get_about() {
            out.push_str(&format!("{}\n\n", one_line(&about.to_string())));
        }
        if args.is_empty() {
            out.push_str("No flags.\n");
        } else {
            out.push_str("| flag | variable | default | meaning |\n|---|---|---|---|\n");
            for arg in args {
                out.push_str(&row(arg));
            }
        }
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        section(out, &format!("{path} {}", sub.get_name()), sub);
    }
}

fn row(arg: &Arg) -> String {
    let flag = match (arg.get_long(), arg.get_value_names()) {
        (Some(long), _) if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count) => format!("`--{long}`"),
        (Some(long), Some(names)) => format!("`--{long} {}`", names.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" ")),
        (Some(long), None) => format!("`--{long} {}`", arg.get_id().as_str().to_uppercase()),
        (None, _) => format!(
            "`{}`",
            arg.get_value_names()
                .map_or_else(|| arg.get_id().as_str().to_uppercase(), |n| n.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" "))
        ),
    };
    let env = arg.get_env().map_or_else(|| "".to_owned(), |e| format!("`{}`", e.to_string_lossy()));
    let default: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    let default = if default.is_empty() || matches!(arg.get_action(), ArgAction::SetTrue) {
        String::new()
    } else {
        format!("`{}`", default.join(","))
    };
    let mut help = arg.get_long_help().or_else(|| arg.get_help()).map(|h| one_line(&h.to_string())).unwrap_or_default();
    let values: Vec<String> =
        arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| format!("`{}`", v.get_name())).collect();
    if !values.is_empty() && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse) {
        if !help.is_empty() && !help.ends_with('.') {
            help.push('.');
        }
        help.push_str(&format!(" One of {}.", values.join(", ")));
    }
    format!("| {flag} | {env} | {default} | {} |\n", help.replace('|', "\\|"))
}

/// Help text on one line (a table cell).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every long flag of `cli` and its subcommands.
fn long_flags(cmd: &Command, into: &mut std::collections::BTreeSet<String>) {
    for arg in cmd.get_arguments() {
        if let Some(long) = arg.get_long() {
            into.insert(long.to_owned());
        }
    }
    for sub in cmd.get_subcommands() {
        long_flags(sub, into);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::CommandFactory;

    use super::*;
    use crate::config::Cli;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn the_configuration_reference_is_current() {
        let rendered = render(&Cli::command());
        let path = root().join("docs/configuration.md");
        if std::env::var_os("SVC_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &rendered).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == rendered,
            "docs/configuration.md is not what the flags say: run `SVC_UPDATE_DOCS=1 cargo test -p svc the_configuration_reference` and commit it"
        );
    }

    /// Every `--flag` the README and the docs name is a flag of some subcommand (or of a tool
    /// the docs show beside svc: cargo, curl, docker, the load scripts).
    #[test]
    fn every_flag_the_docs_name_exists() {
        let mut known = std::collections::BTreeSet::new();
        long_flags(&Cli::command(), &mut known);
        let others = [
            "release",
            "workspace",
            "exclude",
            "test",
            "lib",
            "doc",
            "example",
            "bench",
            "bin",
            "tests",
            "all-targets",
            "check",
            "no-run",
            "package",
            "build",
            "detach",
            "data",
            "header",
            "request",
            "silent",
            "fail",
            "show-error",
            "output",
            "location",
            "checks",
            "strict-transport",
            "allow-dirty",
            "no-fail-fast",
            "nocapture",
            "features",
            "path",
            "locked",
            "verbose",
            "version",
            "help",
            "profile",
            "quiet",
            "ignored",
            "include-ignored",
            "skip",
            "exact",
            "list",
            "format",
            "report-time",
            // jeprof's (docs/operator-guide.md, "Memory").
            "text",
            "lines",
            "base",
            // perf's (docs/testing.md, profiling the request path).
            "call-graph",
        ];
        let mut unknown = Vec::new();
        let mut docs: Vec<std::path::PathBuf> = vec![root().join("README.md")];
        for entry in std::fs::read_dir(root().join("docs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") && !path.ends_with("configuration.md") && !path.ends_with("performance.md") {
                docs.push(path);
            }
        }
        for path in docs {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("--") {
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '-') {
                    continue;
                }
                let name: String = text[i + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
                if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    continue;
                }
                if !known.contains(&name) && !others.contains(&name.as_str()) {
                    unknown.push(format!("{}: --{name}", path.file_name().unwrap().to_string_lossy()));
                }
            }
        }
        unknown.sort();
        unknown.dedup();
        assert!(unknown.is_empty(), "the docs name flags svc does not have: {unknown:#?}");
    }
}
