//! `chatd mcp …`: MCP servers from the command line. [`call`] reaches one server by URL with the
//! client code the server uses; [`login`] logs in to a configured one and keeps the login;
//! [`loopback`] is how a login is approved there.

pub mod call;
pub mod login;
pub mod loopback;
