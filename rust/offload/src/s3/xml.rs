//! The few S3 XML answers read (`UploadId`, `ListBucketResult`, `Error`): plain tag look-ups,
//! enough for these flat documents.

/// The text of every `<tag>...</tag>` in `xml`, unescaped, in order.
#[must_use]
pub fn all(xml: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(unescape(&rest[..j]));
        rest = &rest[j + close.len()..];
    }
    out
}

/// The text of the first `<tag>...</tag>`.
#[must_use]
pub fn first(xml: &str, tag: &str) -> Option<String> {
    all(xml, tag).into_iter().next()
}

/// Undoes XML's five entities and numeric references.
#[must_use]
pub fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';') else { break };
        let ent = &rest[1..end];
        let ch = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Escapes text for an XML element.
#[must_use]
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        let x = "<R><Contents><Key>a&amp;b</Key></Contents><Contents><Key>c&#47;d</Key>\
                 </Contents><IsTruncated>false</IsTruncated></R>";
        assert_eq!(all(x, "Key"), vec!["a&b", "c/d"]);
        assert_eq!(first(x, "IsTruncated").as_deref(), Some("false"));
        assert_eq!(first(x, "Nope"), None);
        assert_eq!(escape("\"a\"&<b>"), "&quot;a&quot;&amp;&lt;b&gt;");
    }
}
