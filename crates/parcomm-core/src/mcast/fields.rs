//! Reading plain JSON objects field by field, so that every error names the
//! field (`networks[3].loss: expected a number, got "x"`), which serde's
//! derived errors do not for wrong types and unknown enum values.

use serde_json::{Map, Value};

pub struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}...", &s[..s.char_indices().nth(37).map_or(s.len(), |(i, _)| i)])
    } else {
        s
    }
}

impl<'a> Obj<'a> {
    /// `v` as an object; `path` names it in errors ("" for the top level).
    pub fn new(v: &'a Value, path: &str) -> Result<Obj<'a>, String> {
        match v {
            Value::Object(map) => Ok(Obj { map, path: path.to_string() }),
            other => Err(format!(
                "{}: expected an object, got {}",
                if path.is_empty() { "top level" } else { path },
                show(other)
            )),
        }
    }

    pub fn field(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Refuse keys outside `allowed` (typos would otherwise be silently ignored).
    pub fn only(&self, allowed: &[&str]) -> Result<(), String> {
        match self.map.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(format!("{}: unknown field (allowed: {})", self.field(k), allowed.join(", "))),
            None => Ok(()),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn need(&self, key: &str) -> Result<&'a Value, String> {
        self.get(key).ok_or_else(|| format!("{}: missing field", self.field(key)))
    }

    fn bad(&self, key: &str, want: &str, v: &Value) -> String {
        format!("{}: expected {want}, got {}", self.field(key), show(v))
    }

    pub fn str(&self, key: &str) -> Result<&'a str, String> {
        let v = self.need(key)?;
        v.as_str().ok_or_else(|| self.bad(key, "a string", v))
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, String> {
        self.get(key).map(|_| self.str(key)).transpose()
    }

    pub fn f64(&self, key: &str) -> Result<f64, String> {
        let v = self.need(key)?;
        v.as_f64().ok_or_else(|| self.bad(key, "a number", v))
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, String> {
        self.get(key).map(|_| self.f64(key)).transpose()
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, String> {
        self.get(key).map(|v| v.as_u64().ok_or_else(|| self.bad(key, "a non-negative integer", v))).transpose()
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, String> {
        self.get(key).map(|v| v.as_bool().ok_or_else(|| self.bad(key, "true or false", v))).transpose()
    }

    pub fn list(&self, key: &str) -> Result<&'a Vec<Value>, String> {
        let v = self.need(key)?;
        v.as_array().ok_or_else(|| self.bad(key, "a list", v))
    }
}

/// Parse JSON text into a value; `what` prefixes syntax errors.
pub fn parse(text: &str, what: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what}: invalid JSON: {e}"))
}
