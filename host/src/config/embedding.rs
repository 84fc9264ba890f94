//! `CHATD_EMBEDDING_MODEL`: the model whose embeddings index the library (docs/files.md), as
//! `PROVIDER/MODEL`. The provider is one of the server's (a bundled one, or one an operator
//! declared); the model is the upstream's id, which may itself hold slashes
//! (`openrouter/openai/text-embedding-3-small`: provider `openrouter`).

use std::fmt;

/// A provider's embedding model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbeddingModel {
    pub provider: String,
    pub model: String,
}

impl fmt::Display for EmbeddingModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

pub(super) fn parse_embedding_model(s: &str) -> Result<EmbeddingModel, String> {
    EmbeddingModel::parse(s)
}

impl EmbeddingModel {
    /// `PROVIDER/MODEL`, cut at the first slash: a provider id (`[a-z0-9_-]{1,64}`) and a
    /// model id that is not blank.
    pub fn parse(s: &str) -> Result<Self, String> {
        let rule = "must be PROVIDER/MODEL (a provider id, a slash, the upstream's model id)";
        let (provider, model) = s.split_once('/').ok_or_else(|| rule.to_string())?;
        if !super::names::is_name(provider, b"-") {
            return Err(format!(
                "{rule}: the provider {provider:?} must match [a-z0-9_-]{{1,64}}"
            ));
        }
        if model.trim().is_empty() || model.len() > 256 || model.chars().any(char::is_control) {
            return Err(format!(
                "{rule}: the model must be 1 to 256 characters without control characters"
            ));
        }
        Ok(EmbeddingModel {
            provider: provider.to_string(),
            model: model.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_and_a_model_that_may_hold_slashes() {
        let m = parse_embedding_model("openrouter/openai/text-embedding-3-small").unwrap();
        assert_eq!(m.provider, "openrouter");
        assert_eq!(m.model, "openai/text-embedding-3-small");
        assert_eq!(m.to_string(), "openrouter/openai/text-embedding-3-small");
        for bad in [
            "nomic-embed-text",
            "/m",
            "Big Provider/m",
            "p/",
            "p/  ",
            "p/a\nb",
        ] {
            let why = parse_embedding_model(bad).unwrap_err();
            assert!(why.starts_with("must be PROVIDER/MODEL"), "{bad}: {why}");
        }
    }
}
