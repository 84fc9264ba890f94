//! The record-only interfaces of every world (`types`, `tool-types`, `provider-types`,
//! `search-types`, `extractor-types`): WIT interfaces of types and no functions, linked through an empty view.

use wasmtime::component::HasData;

use crate::plugins::bindings::extractor::chatd::plugin::extractor_types;
use crate::plugins::bindings::imports::chatd::plugin::types;
use crate::plugins::bindings::provider::chatd::plugin::provider_types;
use crate::plugins::bindings::search::chatd::plugin::search_types;
use crate::plugins::bindings::tool::chatd::plugin::tool_types;

/// The record-only interfaces have no functions; they are linked through this empty view.
pub struct Records;

impl HasData for Records {
    type Data<'a> = Records;
}

impl types::Host for Records {}
impl tool_types::Host for Records {}
impl provider_types::Host for Records {}
impl search_types::Host for Records {}
impl extractor_types::Host for Records {}
