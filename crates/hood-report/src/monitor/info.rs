//! `hood info`: the tree listing and one node as indented text.

use serde_json::Value;

/// Render the list of paths with descriptions.
pub fn render_paths(paths: &[(String, String)]) -> String {
    let w = paths
        .iter()
        .map(|(p, _)| p.len())
        .max()
        .unwrap_or(0)
        .min(48);
    let mut s = String::new();
    for (p, d) in paths {
        s.push_str(&format!("{p:<w$}  {d}\n"));
    }
    s
}

/// Render one node as `key: value` lines, nested objects indented, list items by id.
pub fn render_node(path: &str, v: &Value) -> String {
    let mut s = String::new();
    match v {
        Value::Object(_) | Value::Array(_) => {
            s.push_str(path);
            s.push_str(":\n");
            walk(v, 1, &mut s);
        }
        _ => s.push_str(&format!("{path}: {}\n", scalar(v))),
    }
    s
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
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

fn walk(v: &Value, depth: usize, s: &mut String) {
    let pad = "  ".repeat(depth);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x {
                    Value::Object(_) => {
                        s.push_str(&format!("{pad}{k}:\n"));
                        walk(x, depth + 1, s);
                    }
                    Value::Array(a) if a.iter().any(|e| e.is_object()) => {
                        s.push_str(&format!("{pad}{k}: ({} items)\n", a.len()));
                        walk(x, depth + 1, s);
                    }
                    Value::Array(a) => {
                        let items: Vec<String> = a.iter().map(scalar).collect();
                        s.push_str(&format!("{pad}{k}: [{}]\n", items.join(", ")));
                    }
                    _ => s.push_str(&format!("{pad}{k}: {}\n", scalar(x))),
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                if x.is_object() {
                    s.push_str(&format!("{pad}[{}]\n", item_label(i, x)));
                    walk(x, depth + 1, s);
                } else {
                    s.push_str(&format!("{pad}{}\n", scalar(x)));
                }
            }
        }
        _ => s.push_str(&format!("{pad}{}\n", scalar(v))),
    }
}
