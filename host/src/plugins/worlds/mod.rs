//! One module per WIT world a plugin implements: [`tool`] (describe, invoke), [`search`]
//! (search, answer), [`provider`] (list models, turns; with the codec worlds, turns the host
//! drives) and [`extractor`] (a document's text). Each links its component against its world once and runs each call on
//! [`crate::plugins::runtime::Core`].

pub mod extractor;
pub mod provider;
pub mod search;
pub mod tool;
