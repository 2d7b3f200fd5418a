//! A change to one unit's terraform state that a person asks for by hand (`/import`,
//! `/state rm`): the resource address and import id it names, each checked once, here,
//! when it is read from a comment.
//!
//! Both come from a comment, so they are hostile input that becomes arguments of a
//! terraform command: a value here never starts with `-` (it cannot become an option),
//! is bounded in length, holds no whitespace, control, invisible or backtick character,
//! and an address follows terraform's resource address grammar. Nothing here ever goes
//! through a shell; the executor passes each as one argument.

use std::fmt;

/// The longest resource address accepted, in bytes.
pub const MAX_ADDRESS_BYTES: usize = 512;
/// The longest import id accepted, in bytes (long cloud ids, such as Azure's, fit).
pub const MAX_IMPORT_ID_BYTES: usize = 1024;

/// A terraform resource address: `aws_vpc.main`, `module.net.aws_subnet.a[0]`,
/// `module.x["k"].data.aws_ami.ubuntu`, or (for `/state rm`) a whole module,
/// `module.net`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceAddress(String);

/// The provider's id of an existing object, for `terraform import`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImportId(String);

/// What the address names, for the commands that care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    /// A managed resource (or one of its instances): importable.
    Managed,
    /// A data source: in state, but nothing to import.
    Data,
    /// A module call (or one of its instances): every resource in it.
    Module,
}

/// One hand-made state change of one unit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StateChange {
    /// `terraform import <address> <id>`.
    Import {
        address: ResourceAddress,
        id: ImportId,
    },
    /// `terraform state rm <address>`.
    Remove { address: ResourceAddress },
}

impl ResourceAddress {
    /// `text` as an address, or why it is none (a phrase: "it starts with `-`").
    pub fn parse(text: &str) -> Result<(ResourceAddress, AddressKind), String> {
        checked_value(text, MAX_ADDRESS_BYTES)?;
        let kind = grammar(text)?;
        Ok((ResourceAddress(text.to_string()), kind))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl ImportId {
    /// `text` as an import id, or why it is none.
    pub fn parse(text: &str) -> Result<ImportId, String> {
        checked_value(text, MAX_IMPORT_ID_BYTES)?;
        Ok(ImportId(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl StateChange {
    /// The address the change is about.
    pub fn address(&self) -> &ResourceAddress {
        match self {
            StateChange::Import { address, .. } | StateChange::Remove { address } => address,
        }
    }
}

impl fmt::Display for ResourceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for ImportId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What every value must be, whatever its grammar.
fn checked_value(text: &str, max: usize) -> Result<(), String> {
    if text.is_empty() {
        return Err("it is empty".into());
    }
    if text.len() > max {
        return Err(format!("it is longer than {max} bytes"));
    }
    if text.starts_with('-') {
        // Terraform would read it as an option (`-state=…`, `-lock=false`).
        return Err("it starts with `-`, which terraform would read as an option".into());
    }
    if text.contains('`') {
        return Err("it holds a backtick".into());
    }
    if text
        .chars()
        .any(|c| c.is_whitespace() || crate::inert::hides_text(c))
    {
        return Err("it holds a space, a control character or an invisible character".into());
    }
    Ok(())
}

/// `module.NAME[INDEX].` steps, then `[data.]TYPE.NAME[INDEX]`, or only module steps.
fn grammar(text: &str) -> Result<AddressKind, String> {
    let mut rest = text;
    let mut modules = 0;
    while let Some(after) = rest.strip_prefix("module.") {
        let (_, after) = identifier(after)?;
        let after = index(after)?;
        modules += 1;
        if after.is_empty() {
            return Ok(AddressKind::Module);
        }
        rest = after
            .strip_prefix('.')
            .ok_or_else(|| format!("`{}` does not follow a module's name", first(after)))?;
    }
    let (kind, rest) = match rest.strip_prefix("data.") {
        Some(after) => (AddressKind::Data, after),
        None => (AddressKind::Managed, rest),
    };
    let (_, rest) = identifier(rest)?;
    let rest = rest.strip_prefix('.').ok_or_else(|| {
        if modules == 0 && rest.is_empty() {
            "a resource address is `TYPE.NAME`, like `aws_vpc.main`".to_string()
        } else {
            format!("`{}` does not follow a resource type", first(rest))
        }
    })?;
    let (_, rest) = identifier(rest)?;
    let rest = index(rest)?;
    if !rest.is_empty() {
        return Err(format!(
            "`{}` does not follow a resource's name",
            first(rest)
        ));
    }
    Ok(kind)
}

/// A terraform identifier (a letter or `_`, then letters, digits, `_` and `-`) at the
/// start of `text`, and what follows it.
fn identifier(text: &str) -> Result<(&str, &str), String> {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(text.len());
    let name = &text[..end];
    match name.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => Ok((name, &text[end..])),
        Some(_) => Err(format!(
            "`{}` is not a name (a name starts with a letter or `_`)",
            first(name)
        )),
        None if text.is_empty() => Err("it ends where a name should follow".into()),
        None => Err(format!("`{}` is not a name", first(text))),
    }
}

/// An optional `[0]` or `["key"]` at the start of `text`, and what follows it.
fn index(text: &str) -> Result<&str, String> {
    let Some(inner) = text.strip_prefix('[') else {
        return Ok(text);
    };
    let bad = || "an index is a number or a quoted key, like `[0]` or `[\"a\"]`".to_string();
    if let Some(key) = inner.strip_prefix('"') {
        let end = key.find('"').ok_or_else(bad)?;
        if key[..end].contains('\\') {
            return Err(bad());
        }
        return key[end + 1..].strip_prefix(']').ok_or_else(bad);
    }
    let end = inner.find(']').ok_or_else(bad)?;
    if end == 0 || !inner[..end].bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    Ok(&inner[end + 1..])
}

/// The first few characters of `text`, for a message.
fn first(text: &str) -> String {
    text.chars().take(20).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Result<AddressKind, String> {
        ResourceAddress::parse(text).map(|(_, kind)| kind)
    }

    #[test]
    fn addresses_terraform_accepts() {
        assert_eq!(kind("terraform_data.x"), Ok(AddressKind::Managed));
        assert_eq!(kind("aws_subnet.a[0]"), Ok(AddressKind::Managed));
        assert_eq!(
            kind("module.net[\"eu-west-1\"].module.b.aws_iam_role.r[\"a/b:c\"]"),
            Ok(AddressKind::Managed)
        );
        assert_eq!(kind("data.aws_ami.ubuntu"), Ok(AddressKind::Data));
        assert_eq!(kind("module.x.data.a.b"), Ok(AddressKind::Data));
        assert_eq!(kind("module.net"), Ok(AddressKind::Module));
        assert_eq!(kind("module.net[2].module.sub"), Ok(AddressKind::Module));
    }

    #[test]
    fn hostile_or_malformed_addresses_are_refused() {
        for bad in [
            "",
            "-state=/etc/x",
            "-lock=false",
            "terraform_data",
            "terraform_data.",
            "terraform_data.x.y",
            "terraform_data.x[",
            "terraform_data.x[a]",
            "terraform_data.x[\"a\\\"]",
            "terraform_data.x]",
            "1x.y",
            "a.b;rm",
            "a.b`x`",
            "a.b$(id)",
            "@team.x",
            "module.",
            "module.x.",
            "a.b\u{202e}",
            "a.b\n",
        ] {
            assert!(kind(bad).is_err(), "{bad:?} was accepted");
        }
        let long = format!("a.{}", "b".repeat(MAX_ADDRESS_BYTES));
        assert_eq!(
            kind(&long),
            Err(format!("it is longer than {MAX_ADDRESS_BYTES} bytes"))
        );
        assert_eq!(
            kind("-state=/etc/x"),
            Err("it starts with `-`, which terraform would read as an option".into())
        );
    }

    #[test]
    fn import_ids_are_free_text_but_never_options() {
        for good in [
            "vpc-0abc",
            "arn:aws:iam::123456789012:role/x",
            "/subscriptions/x/resourceGroups/y",
            "projects/p/zones/z/instances/i",
            "a=b",
        ] {
            assert!(ImportId::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "-x", "--", "a`b", "a b", "a\u{200b}b"] {
            assert!(ImportId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(ImportId::parse(&"i".repeat(MAX_IMPORT_ID_BYTES + 1)).is_err());
    }
}
