//! Java `.properties` text as `java.util.Properties.load` reads it (Pulsar's `broker.conf` /
//! `standalone.conf` format): `#` and `!` comment lines, `key=value`, `key:value` or
//! `key value`, backslash line continuations (leading blanks of the next line dropped), the
//! escapes `\t \n \r \f \uXXXX` and `\x` = `x`. A later duplicate replaces an earlier one.

/// One `key=value` of a properties text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// The key, unescaped.
    pub key: String,
    /// The value, unescaped, trailing blanks removed (Pulsar trims values).
    pub value: String,
    /// 1-based line where the entry starts.
    pub line: usize,
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0c')
}

/// Whether `line` ends with an odd number of backslashes (a continuation).
fn continues(line: &str) -> bool {
    line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Parses a properties text into its entries, in file order, duplicates resolved (last wins,
/// at the position of the first).
///
/// # Errors
/// A malformed `\uXXXX` escape, with its line.
pub fn parse(text: &str) -> Result<Vec<Property>, String> {
    let mut out: Vec<Property> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((idx, first)) = lines.next() {
        let first = first.trim_start_matches(is_blank);
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        // Join continuation lines into one logical line.
        let mut logical = String::new();
        let mut cur = first.to_owned();
        loop {
            if continues(&cur) {
                cur.pop();
                logical.push_str(&cur);
                match lines.next() {
                    Some((_, next)) => cur = next.trim_start_matches(is_blank).to_owned(),
                    None => break,
                }
            } else {
                logical.push_str(&cur);
                break;
            }
        }
        let (key, value) = split_entry(&logical);
        let key = unescape(key).map_err(|e| format!("line {}: {e}", idx + 1))?;
        let value = unescape(value).map_err(|e| format!("line {}: {e}", idx + 1))?;
        let value = value.trim_end_matches(is_blank).to_owned();
        if let Some(p) = out.iter_mut().find(|p| p.key == key) {
            p.value = value;
        } else {
            out.push(Property {
                key,
                value,
                line: idx + 1,
            });
        }
    }
    Ok(out)
}

/// Splits a logical line at the first unescaped `=`, `:` or blank (raw, still escaped).
fn split_entry(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || is_blank(c) {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches(is_blank);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(is_blank);
    }
    (key, rest)
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("malformed \\u escape \\u{hex}"))?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(text: &str) -> Vec<(String, String)> {
        parse(text)
            .unwrap()
            .into_iter()
            .map(|p| (p.key, p.value))
            .collect()
    }

    #[test]
    fn separators_comments_and_blanks() {
        let got = kv("# c\n! c too\n\n  a=1\nb : 2\nc 3\nd=\ne\nf = x = y  \n");
        let want = [
            ("a", "1"),
            ("b", "2"),
            ("c", "3"),
            ("d", ""),
            ("e", ""),
            ("f", "x = y"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn continuations_and_escapes() {
        let got = kv("list=a,\\\n    b,\\\n  c\nk\\=x=\\u0041\\t\\\\\nlast=\\\n");
        assert_eq!(got[0], ("list".into(), "a,b,c".into()));
        assert_eq!(got[1], ("k=x".into(), "A\t\\".into()));
        assert_eq!(got[2], ("last".into(), String::new()));
        assert!(parse("a=\\u12").is_err());
    }

    #[test]
    fn later_duplicates_win_and_lines_are_counted() {
        let p = parse("a=1\n\nb=2\na=3\n").unwrap();
        assert_eq!(p[0].value, "3");
        assert_eq!(p[0].line, 1);
        assert_eq!(p[1].line, 3);
    }
}
