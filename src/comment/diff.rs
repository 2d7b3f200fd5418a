//! A unit's rendered plan made ready for a ```` ```diff ```` block, as GitHub's and GitLab's
//! highlighters read one: only a line's first column decides its colour.
//!
//! Only symbols move, never text: the change a reader sees is the change `terraform show`
//! prints, with each `+`, `-` and `~` marker taken to the first column (`~` written as `!`,
//! the mark a diff highlighter colours as a change, as Atlantis does). Never adds, drops or
//! reorders a line.

/// The plan for a ```` ```diff ```` block: on lines that start with white space and then `+`,
/// `-` or `~` and a space, the symbol trades places with the white space, so the highlighter
/// colours additions, removals and in-place changes while every column stays where it was;
/// `~` becomes `!`, since `~` gets no colour and an update's nested `-` lines would
/// otherwise read as a block of deletions. `-/+`, `+/-`, `<=` and the rest stay as
/// terraform draws them. Control characters (the renderer escapes them already) become
/// U+FFFD, so nothing but `\n` ends a line.
pub(super) fn diff_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let line = match body.as_bytes() {
            [symbol @ (b'+' | b'-' | b'~'), b' ', ..] if indent > 0 => {
                out.push(marker(*symbol));
                out.push_str(&line[..indent]);
                &body[1..]
            }
            [b'~', b' ', ..] => {
                out.push('!');
                &body[1..]
            }
            _ => line,
        };
        out.extend(line.chars().map(|c| {
            if c.is_control() && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        }));
    }
    out
}

/// The first-column mark for a symbol terraform draws: `~` is written `!`.
fn marker(symbol: u8) -> char {
    match symbol {
        b'~' => '!',
        other => char::from(other),
    }
}

/// Undoes [`diff_text`]'s moves on one line: what `terraform show` printed (for tests and
/// for readers comparing the two).
#[cfg(test)]
fn as_terraform_draws(line: &str) -> String {
    let (first, rest) = match line.chars().next() {
        Some(c @ ('+' | '-' | '!')) if rest_is_indented(line) => (c, &line[1..]),
        _ => return line.to_string(),
    };
    let body = rest.trim_start_matches(' ');
    let indent = rest.len() - body.len();
    let symbol = if first == '!' { '~' } else { first };
    format!("{}{symbol} {body}", " ".repeat(indent.saturating_sub(1)))
}

#[cfg(test)]
fn rest_is_indented(line: &str) -> bool {
    line[1..].starts_with(' ') && !line.starts_with("-/+") && !line.starts_with("+/-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_lines_put_plus_and_minus_first_and_keep_the_columns() {
        let text = "  # terraform_data.a will be updated in-place\n  ~ resource \"terraform_data\" \"a\" {\n      + id    = (known after apply)\n      - gone  = \"x\" -> null\n      ~ input = <<-EOT\n          - old\n          + new\n            -unchanged\n        EOT\n    }\n-/+ resource \"x\" \"y\" {\n+ bare\n  ctl = \"a\u{7}b\"";
        assert_eq!(
            diff_text(text),
            "  # terraform_data.a will be updated in-place\n!   resource \"terraform_data\" \"a\" {\n+       id    = (known after apply)\n-       gone  = \"x\" -> null\n!       input = <<-EOT\n-           old\n+           new\n            -unchanged\n        EOT\n    }\n-/+ resource \"x\" \"y\" {\n+ bare\n  ctl = \"a\u{FFFD}b\""
        );
    }

    #[test]
    fn tildes_become_bangs_in_the_first_column_and_nothing_else_moves() {
        let text = "  # terraform_data.a will be updated in-place\n  ~ resource \"terraform_data\" \"a\" {\n      ~ output = {\n          - a = 1\n        } -> (known after apply)\n        id = \"x\" # ~ stays\n    }\n~ top\n~x";
        let drawn = diff_text(text);
        assert_eq!(
            drawn,
            "  # terraform_data.a will be updated in-place\n!   resource \"terraform_data\" \"a\" {\n!       output = {\n-           a = 1\n        } -> (known after apply)\n        id = \"x\" # ~ stays\n    }\n! top\n~x"
        );
        // Every line reads back as terraform drew it.
        for (original, shown) in text.lines().zip(drawn.lines()) {
            assert_eq!(as_terraform_draws(shown), original);
        }
    }
}
