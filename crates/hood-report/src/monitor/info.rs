//! `hood info`: the tree listing and one node as indented text.

use std::io::Write;

use serde_json::Value;

use super::fmt::human_bytes;
use crate::{safe, ReportError};

/// Render the list of paths with descriptions into `out`.
pub fn render_paths(out: &mut dyn Write, paths: &[(String, String)]) -> Result<(), ReportError> {
    let w = paths
        .iter()
        .map(|(p, _)| p.len())
        .max()
        .unwrap_or(0)
        .min(48);
    for (p, d) in paths {
        let (p, d) = (safe::text(p), safe::text(d));
        writeln!(out, "{p:<w$}  {d}")?;
    }
    Ok(())
}

/// Render one node as `key: value` lines in the tree's own order (load one, five, fifteen),
/// nested objects indented, list items by id; byte counts in binary units (`--json` keeps
/// the raw numbers). Into `out`.
pub fn render_node(out: &mut dyn Write, path: &str, v: &Value) -> Result<(), ReportError> {
    let mut s = String::new();
    let last = path.trim_matches('.').rsplit('.').next().unwrap_or("");
    let in_bytes = path.split('.').any(|seg| seg == "physmem");
    match v {
        Value::Object(_) | Value::Array(_) => {
            s.push_str(&safe::text(path));
            s.push_str(":\n");
            walk(v, 1, in_bytes, &mut s);
        }
        _ => s.push_str(&format!(
            "{}: {}\n",
            safe::text(path),
            value(v, in_bytes || is_bytes_key(last))
        )),
    }
    out.write_all(s.as_bytes())?;
    Ok(())
}

/// Keys whose numbers count bytes.
fn is_bytes_key(k: &str) -> bool {
    k.ends_with("_bytes") || k == "rchar" || k == "wchar" || k == "physmem"
}

/// A scalar, as a byte count in binary units when `bytes` and it is a whole number.
fn value(v: &Value, bytes: bool) -> String {
    match v.as_u64() {
        Some(n) if bytes => human_bytes(n),
        _ => scalar(v),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        // Names and command lines of processes: escaped (a JSON string may hold anything).
        Value::String(s) => safe::text(s).into_owned(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn item_label(i: usize, v: &Value) -> String {
    for k in ["pid", "id"] {
        match v.get(k) {
            Some(Value::Null) | None => {}
            Some(x) => return scalar(x),
        }
    }
    i.to_string()
}

fn walk(v: &Value, depth: usize, bytes: bool, s: &mut String) {
    let pad = "  ".repeat(depth);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let k = safe::text(k);
                match x {
                    Value::Object(_) => {
                        s.push_str(&format!("{pad}{k}:\n"));
                        walk(x, depth + 1, bytes || is_bytes_key(&k), s);
                    }
                    Value::Array(a) if a.iter().any(|e| e.is_object()) => {
                        s.push_str(&format!("{pad}{k}: ({} items)\n", a.len()));
                        walk(x, depth + 1, bytes, s);
                    }
                    Value::Array(a) => {
                        let items: Vec<String> = a.iter().map(scalar).collect();
                        s.push_str(&format!("{pad}{k}: [{}]\n", items.join(", ")));
                    }
                    _ => s.push_str(&format!(
                        "{pad}{k}: {}\n",
                        value(x, bytes || is_bytes_key(&k))
                    )),
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                if x.is_object() {
                    s.push_str(&format!("{pad}[{}]\n", item_label(i, x)));
                    walk(x, depth + 1, bytes, s);
                } else {
                    s.push_str(&format!("{pad}{}\n", scalar(x)));
                }
            }
        }
        _ => s.push_str(&format!("{pad}{}\n", scalar(v))),
    }
}

/// `hood info --json`: the list of nodes (`paths`) with their descriptions.
pub fn render_paths_json(schema_version: u32, paths: &[(String, String)]) -> String {
    let list: Vec<_> = paths
        .iter()
        .map(|(p, d)| serde_json::json!({"path": p, "description": d}))
        .collect();
    let j = serde_json::json!({"schema_version": schema_version, "paths": list});
    serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
}

/// `hood info --json PATH`: one node's value.
pub fn render_node_json(schema_version: u32, path: &str, v: &Value) -> String {
    let j = serde_json::json!({
        "schema_version": schema_version,
        "path": path,
        "value": v,
    });
    serde_json::to_string_pretty(&j).unwrap_or_default() + "\n"
}
