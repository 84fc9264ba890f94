//! What an export holds: each exported table with its columns and their stored types
//! ([`TABLES`]), and the values an older export's rows lack ([`DEFAULTS`]). `transfer.rs` reads
//! and writes them.

/// A column's stored type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Integer,
    /// Bytes (BLOB, BYTEA), written as standard base64.
    Bytes,
    /// A boolean (SQLite's 0/1, PostgreSQL's BOOLEAN), written as `true`/`false`.
    Flag,
}

/// A table of an export: its name on the line (`"chat"`), its SQL name, its key (what a
/// conflict names) and its columns, the first ones the key.
#[derive(Debug)]
pub(super) struct Table {
    pub(super) line: &'static str,
    pub(super) sql: &'static str,
    pub(super) key: usize,
    pub(super) columns: &'static [(&'static str, Kind)],
    /// A conflict is never an error (rows every database has, or that follow their parent).
    pub(super) always_skip: bool,
    /// Rows not exported (every database has them): a `WHERE` clause, or empty.
    pub(super) except: &'static str,
}

/// A column a row may lack (an older export's), and the value it then takes: a chat or search
/// made before people existed is the built-in admin's.
pub(super) const DEFAULTS: &[(&str, &str, &str)] = &[
    ("chat", "owner_id", super::people::BUILTIN_ADMIN),
    ("search", "owner_id", super::people::BUILTIN_ADMIN),
];

use Kind::{Bytes as B, Flag as F, Integer as I, Text as T};

/// Every exported table, parents first. People come last: a chat names its owner without a
/// reference the database checks, and the counts read as they did before people existed.
pub(super) const TABLES: &[Table] = &[
    Table {
        line: "chat",
        sql: "chats",
        key: 1,
        columns: &[
            ("id", T),
            ("title", T),
            ("created_at", T),
            ("updated_at", T),
            ("initiated_provider", T),
            ("initiated_model", T),
            ("last_used_provider", T),
            ("last_used_model", T),
            ("additional_system_prompt", T),
            ("enabled_tools", T),
            ("owner_id", T),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "message",
        sql: "messages",
        key: 1,
        columns: &[
            ("id", T),
            ("chat_id", T),
            ("seq", I),
            ("created_at", T),
            ("role", T),
            ("content", T),
            ("name", T),
            ("metadata", T),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "chatFile",
        sql: "chat_files",
        key: 1,
        columns: &[
            ("id", T),
            ("chat_id", T),
            ("name", T),
            ("mime_type", T),
            ("size_bytes", I),
            ("created_at", T),
            ("seq", I),
            ("data", B),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "search",
        sql: "searches",
        key: 1,
        columns: &[
            ("id", T),
            ("title", T),
            ("query", T),
            ("normalized_query", T),
            ("created_at", T),
            ("updated_at", T),
            ("request_id", T),
            ("latency_ms", I),
            ("error", T),
            ("results", T),
            ("answer_text", T),
            ("answer_request_id", T),
            ("answer_citations", T),
            ("answer_error", T),
            ("owner_id", T),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "project",
        sql: "projects",
        key: 1,
        columns: &[("id", T), ("name", T), ("created_at", T)],
        always_skip: true,
        except: "",
    },
    Table {
        line: "projectChat",
        sql: "project_chats",
        key: 2,
        columns: &[("project_id", T), ("chat_id", T), ("created_at", T)],
        always_skip: true,
        except: "",
    },
    Table {
        line: "projectSearch",
        sql: "project_searches",
        key: 2,
        columns: &[("project_id", T), ("search_id", T), ("created_at", T)],
        always_skip: true,
        except: "",
    },
    Table {
        line: "call",
        sql: "llm_calls",
        key: 1,
        columns: &[
            ("id", T),
            ("chat_id", T),
            ("provider", T),
            ("model", T),
            ("created_at", T),
            ("completed_at", T),
            ("input_tokens", I),
            ("output_tokens", I),
            ("total_tokens", I),
            ("latency_ms", I),
            ("error", T),
            ("answered_provider", T),
            ("answered_model", T),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "user",
        sql: "users",
        key: 1,
        columns: &[
            ("id", T),
            ("name", T),
            ("role", T),
            ("disabled", F),
            ("created_at", T),
            ("budget", T),
            ("oidc_subject", T),
        ],
        always_skip: false,
        // The built-in admin, whom the migration makes in every database.
        except: "WHERE id <> 'admin'",
    },
    Table {
        line: "key",
        sql: "api_keys",
        key: 1,
        columns: &[
            ("id", T),
            ("user_id", T),
            ("name", T),
            // The secret's SHA-256, never the secret (docs/teams.md, "What an export holds").
            ("secret_sha256", T),
            ("scopes", T),
            ("created_at", T),
            ("expires_at", T),
            ("revoked_at", T),
            ("budget", T),
        ],
        always_skip: false,
        except: "",
    },
    // Each person's library (store/library.rs): a file as stored (a worker's hold and its
    // attempts left out: a file exported while `processing` is read again after an import),
    // then its chunks, whose keyword index each database makes as they are stored.
    Table {
        line: "libraryFile",
        sql: "library_files",
        key: 1,
        columns: &[
            ("id", T),
            ("owner_id", T),
            ("name", T),
            ("mime_type", T),
            ("size_bytes", I),
            ("sha256", T),
            ("collection", T),
            ("status", T),
            ("error", T),
            ("pages", I),
            ("chunks", I),
            ("content", B),
            ("created_at", T),
        ],
        always_skip: false,
        except: "",
    },
    Table {
        line: "libraryChunk",
        sql: "library_chunks",
        key: 2,
        columns: &[("file_id", T), ("seq", I), ("page", I), ("text", T)],
        always_skip: false,
        except: "",
    },
    // The chunks' vectors (store/library_vectors.rs): paid for once, so moved rather than made
    // again. Not which model serves: the importing server's own worker decides that from its
    // CHATD_EMBEDDING_MODEL and the vectors it finds (library/backfill.rs).
    Table {
        line: "libraryVector",
        sql: "library_vectors",
        key: 3,
        columns: &[("model", T), ("file_id", T), ("seq", I), ("vector", B)],
        always_skip: false,
        except: "",
    },
    // What people spent (usage/): kept by an export, as the chats' call records are. Holds
    // are not: they are requests running now. Nor are login links and sessions (short-lived
    // credentials: people sign in again after an import).
    Table {
        line: "usage",
        sql: "usage_ledger",
        key: 1,
        columns: &[
            ("id", T),
            ("user_id", T),
            ("key_id", T),
            ("source", T),
            ("provider", T),
            ("model", T),
            ("input_tokens", I),
            ("output_tokens", I),
            ("cost_nanos", I),
            ("created_at", T),
        ],
        always_skip: false,
        except: "",
    },
];
