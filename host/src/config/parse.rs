//! The settings' value parsers (each the rule an invalid value is refused by, in the words the
//! one line of [`super::ConfigError`] quotes), and what the defaults are read from.

use std::path::PathBuf;

use url::Url;

use super::{DatabaseUrl, Secret};

pub(super) fn parse_port(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .map_err(|_| "must be an integer from 0 to 65535".into())
}

pub(super) fn parse_positive_u32(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("must be an integer of at least 1".into()),
    }
}

pub(super) fn parse_positive_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("must be an integer of at least 1".into()),
    }
}

pub(super) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" | "" => Ok(false),
        _ => Err("must be true or false".into()),
    }
}

pub(super) fn parse_secret(s: &str) -> Result<Secret, String> {
    Ok(Secret(s.to_string()))
}

/// The secret key authenticates what chatd keeps at rest: a short one could be guessed.
pub(super) fn parse_secret_key(s: &str) -> Result<Secret, String> {
    let key = s.trim();
    // `KEY=` in an env file is unset (`drop_empty_values`).
    if !key.is_empty() && key.chars().count() < 32 {
        return Err(
            "must be at least 32 characters (e.g. the output of `openssl rand -base64 32`)".into(),
        );
    }
    Ok(Secret(key.to_string()))
}

pub(super) fn parse_memory_total(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (64..=1 << 20).contains(&n) => Ok(n),
        _ => Err("must be an integer from 64 to 1048576 (MiB)".into()),
    }
}

/// A blank admin token would let `Authorization: Bearer ` in; refuse it rather than guess.
/// Surrounding white space is dropped: an HTTP header value cannot carry it, so a token kept with
/// a stray space from an env file could never match.
pub(super) fn parse_admin_token(s: &str) -> Result<Secret, String> {
    let token = s.trim();
    if token.is_empty() {
        return Err("must not be blank (unset it for open mode)".into());
    }
    Ok(Secret(token.to_string()))
}

pub(super) fn parse_http_url(s: &str) -> Result<Url, String> {
    let url = Url::parse(s.trim()).map_err(|e| format!("must be an absolute http(s) URL ({e})"))?;
    match url.scheme() {
        "http" | "https" if url.host().is_some() => Ok(url),
        _ => Err("must be an absolute http(s) URL".into()),
    }
}

pub(super) fn parse_otlp_protocol(s: &str) -> Result<String, String> {
    match s.trim() {
        "" | "http/protobuf" => Ok(s.trim().to_string()),
        _ => Err("chatd exports OTLP as http/protobuf only".into()),
    }
}

pub(super) fn parse_traces_exporter(s: &str) -> Result<String, String> {
    match s.trim() {
        "" | "otlp" | "none" => Ok(s.trim().to_string()),
        _ => Err("must be otlp or none".into()),
    }
}

pub(super) fn parse_max_connections(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (2..=1000).contains(&n) => Ok(n),
        _ => Err("must be an integer from 2 to 1000".into()),
    }
}

pub(super) fn parse_database_timeout(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=300).contains(&n) => Ok(n),
        _ => Err("must be an integer from 1 to 300 (seconds)".into()),
    }
}

pub(super) fn parse_database_url(s: &str) -> Result<DatabaseUrl, String> {
    let s = s.trim();
    let scheme = s
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("sqlite") => Ok(DatabaseUrl::Sqlite(s.to_string())),
        Some("postgres" | "postgresql") => Ok(DatabaseUrl::Postgres(s.to_string())),
        _ => Err("must start with sqlite:// or postgres://".into()),
    }
}

/// The memory this process may use: the machine's (`/proc/meminfo`), or the lowest cgroup
/// limit on the way from the process's own cgroup (`/proc/self/cgroup`: a container's, a
/// systemd unit's `MemoryMax`) up to the root when that is lower (v2 `memory.max`, v1
/// `memory.limit_in_bytes`); `None` where nothing can be read.
pub(super) fn usable_memory_bytes() -> Option<u64> {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    // (the controller's folder, its limit file, the process's path in it)
    let hierarchies = cgroups.lines().filter_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let path = PathBuf::from(path.trim_start_matches('/'));
        match controllers {
            "" => Some(("", "memory.max", path)),
            list if list.split(',').any(|c| c == "memory") => {
                Some(("memory", "memory.limit_in_bytes", path))
            }
            _ => None,
        }
    });
    let root = std::path::Path::new("/sys/fs/cgroup");
    let cgroup = hierarchies
        .flat_map(|(folder, file, path)| {
            path.ancestors()
                .map(|dir| root.join(folder).join(dir).join(file))
                .collect::<Vec<_>>()
        })
        .filter_map(|limit| std::fs::read_to_string(limit).ok())
        .filter_map(|limit| limit.trim().parse::<u64>().ok())
        .min();
    match (machine, cgroup) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}
