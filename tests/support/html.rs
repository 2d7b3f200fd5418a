//! Reading the server's HTML pages in tests: handlebars' escapes undone, and the text
//! a person sees in one element.

/// Handlebars' HTML escapes, undone.
pub fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x60;", "`")
        .replace("&#x3D;", "=")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The text of the element with `id="{id}"` (up to its closing tag), inner tags
/// dropped, white space folded, escapes undone.
pub fn text_of(html: &str, id: &str) -> String {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let open = html[..at].rfind('<').unwrap();
    let tag: String = html[open + 1..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    let start = at + html[at..].find('>').unwrap() + 1;
    let end = start + html[start..].find(&format!("</{tag}>")).unwrap();
    let mut text = String::new();
    let mut in_tag = false;
    for c in html[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    unescape(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}
