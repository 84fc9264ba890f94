//! The bundled `python` tool: the interpreter plugin (`plugins/python`) run in sessions. This
//! layer decides which session a call runs in ([`sessions`]), what its folder starts with (the
//! conversation's attachments, [`inputs`]), and what the model sees of a run ([`result`]); the
//! sandbox itself (the instance, its limits, its folder) is the plugin host's.
//!
//! What persists: a chat's session keeps the code's globals and imports between its calls until
//! it ends (idle, evicted, a failed call, a restart, another instance); its folder lives with it.
//! What a session gives the code, and what it cannot reach, is `docs/python.md`'s.

pub mod inputs;
pub mod result;
pub mod sessions;

use std::sync::Arc;
use std::time::Instant;

use crate::config::python::PythonSettings;
use crate::plugins::builtin::INTERPRETER_TOOL;
use crate::plugins::capabilities::files::FilesGrant;
use crate::plugins::capabilities::files::tree::Folder;
use crate::plugins::loading::load::Plugin;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::plugins::memory::{Reclaim, TotalMemory};
use crate::store::Store;
use crate::store::containers::ContainerFileRecord;
use crate::store::files::{Kept, MAX_CHAT_FILE_BYTES, MAX_CHAT_FILES, NewChatFile};
use inputs::InputFile;
pub use result::Ran;
use sessions::{MAX_WAITING, Slot};
pub use sessions::{SessionKey, Sessions};

/// Where a call runs and what its folder starts with.
#[derive(Clone, Debug)]
pub struct CallContext {
    pub session: SessionKey,
    /// The conversation's attachments, put in a new session's folder.
    pub inputs: Arc<Vec<InputFile>>,
    /// Where a chat's (or a container's) session finds the files earlier sessions of it wrote
    /// (the newest of each name, over the attachments); `None` without either.
    pub store: Option<Store>,
    /// The container of an `/openai/v1` request's session, where its files are kept.
    pub container: Option<Container>,
}

impl CallContext {
    /// A call with no conversation: a session of its own, an empty folder (`/mcp`, `chatd
    /// plugins call`).
    pub fn fresh() -> Self {
        Self {
            session: SessionKey::Fresh,
            inputs: Arc::default(),
            store: None,
            container: None,
        }
    }
}

/// An `/openai/v1` request's container (`store/containers.rs`): its id, where its files are
/// kept, and the records of those this request's calls wrote, for its answer to name.
#[derive(Clone, Debug)]
pub struct Container {
    pub id: String,
    /// Whose it is: made theirs, found only by them (`store/containers.rs`).
    pub owner: String,
    pub store: Store,
    written: Arc<std::sync::Mutex<Vec<ContainerFileRecord>>>,
    /// A call of this request ran in it (so it exists, and can be continued).
    ran: Arc<std::sync::atomic::AtomicBool>,
}

impl Container {
    pub fn new(id: String, owner: String, store: Store) -> Self {
        Self {
            id,
            owner,
            store,
            written: Arc::default(),
            ran: Arc::default(),
        }
    }

    /// Whether a call of this request ran in it.
    pub fn ran(&self) -> bool {
        self.ran.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Keeps `files` in the container, remembering their records for the answer; `Err` says
    /// why they were not kept.
    pub async fn keep(&self, files: Vec<NewChatFile>) -> Result<(), String> {
        if files.is_empty() {
            return Ok(());
        }
        match self.store.add_container_files(&self.id, files).await {
            Ok(Ok(records)) => {
                let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
                written.extend(records);
                Ok(())
            }
            Ok(Err(Kept::Full)) => Err(format!(
                "the session already holds its most files ({MAX_CHAT_FILES}, {} MiB in all)",
                MAX_CHAT_FILE_BYTES >> 20
            )),
            Ok(Err(_)) => Err("the session's container expired; its files are not kept".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The records of the files this request's calls wrote, the newest of each name, in the
    /// order they were written.
    pub fn written(&self) -> Vec<ContainerFileRecord> {
        let written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let mut newest: Vec<ContainerFileRecord> = Vec::new();
        for record in written.iter() {
            newest.retain(|r| r.name != record.name);
            newest.push(record.clone());
        }
        newest
    }
}

/// The interpreter of one server: its sessions, and the plugin host whose settings and memory
/// they live under.
pub struct Interpreter {
    sessions: Arc<Sessions>,
    plugins: Arc<PluginHost>,
}

impl Interpreter {
    /// Starts the sessions of `plugins`' interpreter: they are swept every minute, and ended
    /// first when the plugins' total memory runs short.
    pub fn start(plugins: Arc<PluginHost>) -> Arc<Self> {
        let settings = plugins.loader().settings().python.clone();
        let sessions = Sessions::new(settings.max_concurrent_runs);
        let weak_sessions: std::sync::Weak<dyn Reclaim> = Arc::downgrade(&sessions) as _;
        plugins.loader().total_memory().set_reclaim(weak_sessions);
        let interpreter = Arc::new(Self { sessions, plugins });
        let weak = Arc::downgrade(&interpreter);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            loop {
                every.tick().await;
                let Some(interpreter) = weak.upgrade() else {
                    return;
                };
                let settings = interpreter.settings();
                interpreter
                    .sessions
                    .sweep(settings.idle, settings.max_sessions);
            }
        });
        interpreter
    }

    fn settings(&self) -> PythonSettings {
        self.plugins.loader().settings().python.clone()
    }

    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.sessions
    }

    /// Runs `arguments_json` in `plugin` (the interpreter) in the session `context` names.
    pub async fn run(
        &self,
        plugin: &Arc<Plugin>,
        context: &CallContext,
        arguments_json: &str,
    ) -> Result<Ran, String> {
        let settings = self.settings();
        let memory = self.plugins.loader().total_memory().clone();
        run(
            plugin,
            &self.sessions,
            &settings,
            &memory,
            context,
            arguments_json,
        )
        .await
    }
}

/// How often idle sessions are looked for.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

async fn run(
    plugin: &Arc<Plugin>,
    sessions: &Sessions,
    settings: &PythonSettings,
    memory: &TotalMemory,
    context: &CallContext,
    arguments_json: &str,
) -> Result<Ran, String> {
    let tool = plugin.as_tool().expect("the interpreter is a tool plugin");
    let grant = tool
        .files_grant()
        .ok_or("the python tool's plugin holds no folder (it is not the bundled interpreter)")?;
    // The session first, then a turn: a call waiting for its session holds no turn.
    let shared = sessions.slot(&context.session);
    let mut own = Slot::default();
    let mut guard = match &shared {
        Some(slot) => Some(slot.enter().await.map_err(|_| {
            format!(
                "not run: {MAX_WAITING} other calls of this conversation are already waiting \
                 for its Python session, which runs one call at a time. Ask for fewer calls at \
                 once."
            )
        })?),
        None => None,
    };
    let _turn = sessions.turn().await;
    let slot: &mut Slot = match guard.as_deref_mut() {
        Some(slot) => slot,
        None => &mut own,
    };
    let identity = Arc::as_ptr(plugin) as usize;
    let restarted = slot.session.as_ref().is_some_and(|s| s.poisoned()) || slot.plugin != identity;
    if restarted {
        slot.session = None;
    }
    if slot.folder.is_none() {
        slot.folder = Some(new_folder(grant, memory, context).await?);
    } else if let (SessionKey::Container(id), Some(store)) = (&context.session, &context.store) {
        // A container lives a while past its session's last call (its folder made it, or
        // extended its life, at the session's first).
        store
            .touch_container(id)
            .await
            .map_err(|e| format!("the session's container could not be kept: {e}"))?;
    }
    let folder = slot.folder.clone().expect("made above");
    // The container exists now (made with its session's folder, or named by the request).
    if let Some(container) = &context.container {
        container
            .ran
            .store(true, std::sync::atomic::Ordering::Release);
    }
    let session = slot
        .session
        .get_or_insert_with(|| tool.open_session(folder.clone(), settings.output_chars));
    slot.plugin = identity;
    let call = folder.budget.new_call();
    let started = Instant::now();
    let (outcome, peak) = tool
        .invoke_in(session, INTERPRETER_TOOL, arguments_json)
        .await;
    let took = started.elapsed();
    let printed = session.take_output();
    if session.poisoned() {
        slot.session = None;
    }
    let written = folder.written_in(call);
    drop(guard);
    sessions.sweep(settings.idle, settings.max_sessions);
    result::ran(outcome, printed, written, took, peak, settings)
}

/// A new session's folder: the conversation's attachments, then the newest version of each
/// file the chat's earlier sessions wrote (a file that does not fit is left out, and the model
/// finds it missing).
async fn new_folder(
    grant: FilesGrant,
    memory: &TotalMemory,
    context: &CallContext,
) -> Result<Folder, String> {
    let folder = Folder::new(grant.limits, memory.clone());
    let mut files: Vec<InputFile> = context.inputs.to_vec();
    let stored = match (&context.session, &context.store) {
        (SessionKey::Chat(chat_id), Some(store)) => store
            .latest_chat_files(chat_id)
            .await
            .map_err(|e| format!("the chat's files could not be read: {e}"))?,
        (SessionKey::Container(id), Some(store)) => {
            // Made (or its life extended) at its session's first call, so a request that
            // names it later finds it: its owner's request, which the container names.
            let owner = context
                .container
                .as_ref()
                .map(|c| c.owner.as_str())
                .ok_or("a container session without its container")?;
            let live = store
                .open_container(id, owner)
                .await
                .map_err(|e| format!("the session's container could not be opened: {e}"))?;
            if !live {
                return Err("the session's container expired or is not this request's".into());
            }
            store
                .latest_container_files(id)
                .await
                .map_err(|e| format!("the session's files could not be read: {e}"))?
        }
        _ => Vec::new(),
    };
    files.extend(
        stored
            .into_iter()
            .map(|(name, bytes)| InputFile { name, bytes }),
    );
    for input in files {
        if let Err(e) = folder.put(&input.name, input.bytes) {
            tracing::warn!("file {} not put in the python folder: {e}", input.name);
        }
    }
    Ok(folder)
}
