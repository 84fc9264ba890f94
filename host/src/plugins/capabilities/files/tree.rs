//! A session's folder in memory: directories and files as nodes, a [`Budget`] every write goes
//! through, and paths resolved without ever leaving the folder. What WASI calls a descriptor is a
//! [`Descriptor`] here: a node and what it may do.
//!
//! No symbolic or hard links exist, so a path names one node or none; `..` above the folder's
//! root is refused (`not-permitted`), as wasmtime-wasi refuses it above a preopened directory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use super::Limits;
pub use super::budget::Budget;
pub use super::error::{FsError, FsResult};
use super::room::fits;
pub use super::room::{MAX_DEPTH, MAX_PATH};
use crate::plugins::memory::TotalMemory;

/// The longest name of one entry, in bytes (as Linux's NAME_MAX).
const MAX_NAME: usize = 255;

/// A file's bytes and times. `written_in`: the call that last changed it (0: the host put it
/// there). Its bytes are counted in the budget for as long as it lives: a file removed while a
/// descriptor still holds it is given back when the last one closes.
#[derive(Debug)]
pub struct FileNode {
    pub data: Vec<u8>,
    pub modified: SystemTime,
    pub written_in: u64,
    budget: Arc<Budget>,
}

impl Drop for FileNode {
    fn drop(&mut self) {
        self.budget.resize(self.data.len() as u64, 0).ok();
    }
}

#[derive(Debug)]
pub struct DirNode {
    pub entries: BTreeMap<String, Node>,
    pub modified: SystemTime,
    parent: Option<Weak<Mutex<DirNode>>>,
}

pub type File = Arc<Mutex<FileNode>>;
pub type Dir = Arc<Mutex<DirNode>>;

#[derive(Clone, Debug)]
pub enum Node {
    File(File),
    Dir(Dir),
}

impl Node {
    /// The same node (WASI's `is-same-object`).
    pub fn same(&self, other: &Node) -> bool {
        match (self, other) {
            (Node::File(a), Node::File(b)) => Arc::ptr_eq(a, b),
            (Node::Dir(a), Node::Dir(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// A stable number for this node while it lives (`metadata-hash`, `inode`).
    pub fn number(&self) -> u64 {
        match self {
            Node::File(f) => Arc::as_ptr(f) as u64,
            Node::Dir(d) => Arc::as_ptr(d) as u64,
        }
    }
}

/// A node as WASI holds it: the node, whether it may be written, and the folder's budget.
pub struct Descriptor {
    pub node: Node,
    pub write: bool,
    pub budget: Arc<Budget>,
}

/// A folder's entries, read once for `read-directory`.
pub struct Entries(pub std::vec::IntoIter<(String, bool)>);

/// A session's folder: its root and budget. Cheap to clone (a handle); dropping the last handle
/// and descriptor frees its files and gives their bytes back.
#[derive(Clone, Debug)]
pub struct Folder {
    root: Dir,
    pub budget: Arc<Budget>,
}

/// A file as the host sees it between calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCopy {
    /// Its path from the folder's root, `/`-separated.
    pub path: String,
    pub data: Vec<u8>,
}

impl Folder {
    pub fn new(limits: Limits, memory: TotalMemory) -> Self {
        Self {
            root: new_dir(None),
            budget: Arc::new(Budget::new(limits, memory)),
        }
    }

    /// The root, writable, as the guest's preopened directory.
    pub fn root(&self) -> Descriptor {
        Descriptor {
            node: Node::Dir(self.root.clone()),
            write: true,
            budget: self.budget.clone(),
        }
    }

    /// Puts a file at `name` (in the root) from the host: an attachment, a file an earlier call
    /// of the chat wrote. It counts against the folder's budget but not against a call's.
    pub fn put(&self, name: &str, data: Vec<u8>) -> FsResult<()> {
        let root = self.root();
        // A file an earlier session wrote in a folder of its own comes back there.
        if let Some((folders, _)) = name.rsplit_once('/') {
            let mut at = String::new();
            for part in folders.split('/') {
                at = if at.is_empty() {
                    part.into()
                } else {
                    format!("{at}/{part}")
                };
                match create_dir(&root, &at, false) {
                    Ok(()) | Err(FsError::Exists) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let file = open(&root, name, Open::create_truncate(), false)?;
        let Node::File(file) = file else {
            return Err(FsError::IsDirectory);
        };
        let mut node = file.lock().unwrap_or_else(|e| e.into_inner());
        self.budget
            .resize(node.data.len() as u64, data.len() as u64)?;
        node.data = data;
        node.written_in = 0;
        Ok(())
    }

    /// The files the call numbered `call` wrote, in path order.
    pub fn written_in(&self, call: u64) -> Vec<FileCopy> {
        let mut found = Vec::new();
        walk(&self.root, String::new(), &mut |path, file| {
            if file.written_in == call {
                found.push(FileCopy {
                    path: path.to_string(),
                    data: file.data.clone(),
                });
            }
        });
        found
    }
}

fn walk(dir: &Dir, prefix: String, visit: &mut dyn FnMut(&str, &FileNode)) {
    let entries: Vec<(String, Node)> = lock(dir)
        .entries
        .iter()
        .map(|(name, node)| (name.clone(), node.clone()))
        .collect();
    for (name, node) in entries {
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        match node {
            Node::File(file) => visit(&path, &lock(&file)),
            Node::Dir(sub) => walk(&sub, path, visit),
        }
    }
}

fn new_dir(parent: Option<&Dir>) -> Dir {
    Arc::new(Mutex::new(DirNode {
        entries: BTreeMap::new(),
        modified: SystemTime::now(),
        parent: parent.map(Arc::downgrade),
    }))
}

/// A poisoned lock only means a panic elsewhere; the tree itself is still consistent.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How `open-at` opens.
#[derive(Clone, Copy, Debug, Default)]
pub struct Open {
    pub create: bool,
    pub exclusive: bool,
    pub truncate: bool,
    pub directory: bool,
}

impl Open {
    fn create_truncate() -> Self {
        Self {
            create: true,
            truncate: true,
            ..Self::default()
        }
    }
}

/// The folder `dir` and the last part of `path` within it, the parts before it walked.
fn parent_of<'p>(dir: &Descriptor, path: &'p str) -> FsResult<(Dir, &'p str)> {
    let Node::Dir(start) = &dir.node else {
        return Err(FsError::NotDirectory);
    };
    if path.is_empty() {
        return Err(FsError::NoEntry);
    }
    if path.starts_with('/') {
        return Err(FsError::NotPermitted);
    }
    let trimmed = path.trim_end_matches('/');
    let (head, last) = match trimmed.rsplit_once('/') {
        Some((head, last)) => (head, last),
        None => ("", trimmed),
    };
    let parent = walk_dirs(start, head)?;
    Ok((parent, if last.is_empty() { "." } else { last }))
}

/// The folder `path` names from `start` (every part a folder).
fn walk_dirs(start: &Dir, path: &str) -> FsResult<Dir> {
    let mut at = start.clone();
    for (depth, part) in path.split('/').filter(|p| !p.is_empty()).enumerate() {
        if depth >= MAX_DEPTH {
            return Err(FsError::NameTooLong);
        }
        at = step(&at, part)?;
    }
    Ok(at)
}

fn step(at: &Dir, part: &str) -> FsResult<Dir> {
    match part {
        "." => Ok(at.clone()),
        ".." => lock(at)
            .parent
            .as_ref()
            .and_then(Weak::upgrade)
            .ok_or(FsError::NotPermitted),
        name => match lock(at).entries.get(name) {
            Some(Node::Dir(d)) => Ok(d.clone()),
            Some(Node::File(_)) => Err(FsError::NotDirectory),
            None => Err(FsError::NoEntry),
        },
    }
}

/// The node `path` names from `dir`.
pub fn lookup(dir: &Descriptor, path: &str) -> FsResult<Node> {
    let (parent, last) = parent_of(dir, path)?;
    match last {
        "." => Ok(Node::Dir(parent)),
        ".." => Ok(Node::Dir(step(&parent, "..")?)),
        name => lock(&parent)
            .entries
            .get(name)
            .cloned()
            .ok_or(FsError::NoEntry),
    }
}

fn check_name(name: &str) -> FsResult<()> {
    if name.len() > MAX_NAME {
        return Err(FsError::NameTooLong);
    }
    if name == "." || name == ".." || name.contains('\0') {
        return Err(FsError::Invalid);
    }
    Ok(())
}

/// Opens (or creates) `path` from `dir`. `counted`: a creation counts against the call's files.
pub fn open(dir: &Descriptor, path: &str, how: Open, counted: bool) -> FsResult<Node> {
    let (parent, last) = parent_of(dir, path)?;
    if matches!(last, "." | "..") {
        if how.create && how.exclusive {
            return Err(FsError::Exists);
        }
        return lookup(dir, path);
    }
    let found = lock(&parent).entries.get(last).cloned();
    match found {
        Some(_) if how.create && how.exclusive => Err(FsError::Exists),
        Some(Node::File(_)) if how.directory => Err(FsError::NotDirectory),
        Some(Node::File(file)) => {
            if how.truncate {
                let mut node = lock(&file);
                dir.budget.resize(node.data.len() as u64, 0)?;
                node.data.clear();
                node.modified = SystemTime::now();
                node.written_in = dir.budget.call();
            }
            Ok(Node::File(file))
        }
        Some(dir_node @ Node::Dir(_)) => Ok(dir_node),
        None if !how.create => Err(FsError::NoEntry),
        None if how.directory => Err(FsError::Invalid),
        None => {
            check_name(last)?;
            if !dir.write {
                return Err(FsError::NotPermitted);
            }
            check_room(&parent, last.len(), 0, 0)?;
            dir.budget.create(counted)?;
            let file = Arc::new(Mutex::new(FileNode {
                data: Vec::new(),
                modified: SystemTime::now(),
                written_in: dir.budget.call(),
                budget: dir.budget.clone(),
            }));
            let mut parent = lock(&parent);
            parent
                .entries
                .insert(last.to_string(), Node::File(file.clone()));
            parent.modified = SystemTime::now();
            Ok(Node::File(file))
        }
    }
}

/// Makes the folder `path` (`counted`: against the running call's creations).
pub fn create_dir(dir: &Descriptor, path: &str, counted: bool) -> FsResult<()> {
    let (parent, last) = parent_of(dir, path)?;
    // `mkdir(".")` is EEXIST, as on a disk; a name too long is ENAMETOOLONG.
    check_name(last).map_err(|e| match last {
        "." | ".." => FsError::Exists,
        _ => e,
    })?;
    if !dir.write {
        return Err(FsError::NotPermitted);
    }
    if lock(&parent).entries.contains_key(last) {
        return Err(FsError::Exists);
    }
    check_room(&parent, last.len(), 1, 0)?;
    dir.budget.create(counted)?;
    let new = new_dir(Some(&parent));
    let mut parent = lock(&parent);
    parent.entries.insert(last.to_string(), Node::Dir(new));
    parent.modified = SystemTime::now();
    Ok(())
}

/// The depth of `dir` (its folders above it) and the length of its path from the root, in
/// bytes (0 for the root).
fn place(dir: &Dir) -> (usize, usize) {
    let (mut depth, mut length): (usize, usize) = (0, 0);
    let mut at = dir.clone();
    loop {
        let up = lock(&at).parent.as_ref().and_then(Weak::upgrade);
        let Some(up) = up else {
            // Each name but the first is preceded by a `/`.
            return (depth, length.saturating_sub(1));
        };
        let name = lock(&up)
            .entries
            .iter()
            .find(|(_, node)| matches!(node, Node::Dir(d) if Arc::ptr_eq(d, &at)))
            .map_or(0, |(name, _)| name.len());
        length += name + 1;
        depth += 1;
        at = up;
    }
}

/// How far a folder's contents reach below it: the deepest folder's depth under it (0 when it
/// holds none) and the longest path of an entry relative to it (0 when empty).
fn reach(dir: &Dir) -> (usize, usize) {
    let entries: Vec<(usize, Option<Dir>)> = lock(dir)
        .entries
        .iter()
        .map(|(name, node)| match node {
            Node::Dir(d) => (name.len(), Some(d.clone())),
            Node::File(_) => (name.len(), None),
        })
        .collect();
    let (mut depth, mut length) = (0, 0);
    for (name, sub) in entries {
        length = length.max(name);
        if let Some(sub) = sub {
            let (below, longest) = reach(&sub);
            depth = depth.max(below + 1);
            length = length.max(name + 1 + longest);
        }
    }
    (depth, length)
}

/// Whether an entry named with `name` bytes fits in `parent`: a folder (`folder` 1, a file 0)
/// `below` folders deep inside ([`fits`]).
fn check_room(parent: &Dir, name: usize, folder: usize, below: usize) -> FsResult<()> {
    fits(place(parent), name, folder, below, 0)
}

/// Removes the file (`want_dir` false) or empty folder (true) at `path`.
pub fn remove(dir: &Descriptor, path: &str, want_dir: bool) -> FsResult<()> {
    let (parent, last) = parent_of(dir, path)?;
    if matches!(last, "." | "..") {
        return Err(FsError::Invalid);
    }
    if !dir.write {
        return Err(FsError::NotPermitted);
    }
    let mut parent_node = lock(&parent);
    match parent_node.entries.get(last) {
        None => return Err(FsError::NoEntry),
        Some(Node::File(_)) if want_dir => return Err(FsError::NotDirectory),
        Some(Node::Dir(_)) if !want_dir => return Err(FsError::IsDirectory),
        Some(Node::Dir(d)) if !lock(d).entries.is_empty() => return Err(FsError::NotEmpty),
        Some(_) => {}
    }
    // A file's bytes go back when its node is dropped (here, or when the last descriptor
    // holding it closes).
    let removed = parent_node.entries.remove(last);
    parent_node.modified = SystemTime::now();
    drop(parent_node);
    drop(removed);
    dir.budget.remove();
    Ok(())
}

/// Moves `from` (in `from_dir`) to `to` (in `to_dir`), replacing a file there.
pub fn rename(from_dir: &Descriptor, from: &str, to_dir: &Descriptor, to: &str) -> FsResult<()> {
    if !Arc::ptr_eq(&from_dir.budget, &to_dir.budget) {
        return Err(FsError::NotPermitted);
    }
    let (src_parent, src_name) = parent_of(from_dir, from)?;
    let (dst_parent, dst_name) = parent_of(to_dir, to)?;
    check_name(dst_name)?;
    if matches!(src_name, "." | "..") || !from_dir.write || !to_dir.write {
        return Err(FsError::NotPermitted);
    }
    let node = lock(&src_parent)
        .entries
        .get(src_name)
        .cloned()
        .ok_or(FsError::NoEntry)?;
    match &node {
        Node::Dir(moving) => {
            // A folder cannot move into itself or below it.
            let mut at = Some(dst_parent.clone());
            while let Some(d) = at {
                if Arc::ptr_eq(&d, moving) {
                    return Err(FsError::Invalid);
                }
                at = lock(&d).parent.as_ref().and_then(Weak::upgrade);
            }
            // Nor anywhere its contents would be deeper or longer than a folder may hold.
            let (below, longest) = reach(moving);
            fits(place(&dst_parent), dst_name.len(), 1, below, longest)?;
        }
        Node::File(_) => check_room(&dst_parent, dst_name.len(), 0, 0)?,
    }
    let replaced = lock(&dst_parent).entries.get(dst_name).cloned();
    match (&node, &replaced) {
        (_, Some(r)) if r.same(&node) => return Ok(()),
        (Node::File(_), Some(Node::Dir(_))) => return Err(FsError::IsDirectory),
        (Node::Dir(_), Some(Node::File(_))) => return Err(FsError::NotDirectory),
        (Node::Dir(_), Some(Node::Dir(d))) if !lock(d).entries.is_empty() => {
            return Err(FsError::NotEmpty);
        }
        _ => {}
    }
    if replaced.is_some() {
        from_dir.budget.remove();
    }
    lock(&src_parent).entries.remove(src_name);
    if let Node::Dir(moving) = &node {
        lock(moving).parent = Some(Arc::downgrade(&dst_parent));
    }
    if let Node::File(f) = &node {
        // A file moved into place is the call's output as much as one written there.
        lock(f).written_in = from_dir.budget.call();
    }
    let now = SystemTime::now();
    lock(&src_parent).modified = now;
    let mut dst = lock(&dst_parent);
    dst.entries.insert(dst_name.to_string(), node);
    dst.modified = now;
    Ok(())
}

/// Reads up to `len` bytes at `offset`; the bytes and whether the end was reached.
pub fn read_at(file: &File, len: u64, offset: u64) -> (Vec<u8>, bool) {
    let node = lock(file);
    let size = node.data.len() as u64;
    if offset >= size {
        return (Vec::new(), true);
    }
    let end = size.min(offset.saturating_add(len));
    let bytes = node.data[offset as usize..end as usize].to_vec();
    (bytes, end == size)
}

/// Writes `bytes` at `offset` (`None`: at the end), within the budget.
pub fn write_at(file: &File, budget: &Budget, bytes: &[u8], offset: Option<u64>) -> FsResult<u64> {
    let mut node = lock(file);
    let old = node.data.len() as u64;
    let at = offset.unwrap_or(old);
    let end = at
        .checked_add(bytes.len() as u64)
        .ok_or(FsError::FileTooLarge)?;
    if end > old {
        budget.resize(old, end)?;
        node.data.resize(end as usize, 0);
    }
    node.data[at as usize..end as usize].copy_from_slice(bytes);
    node.modified = SystemTime::now();
    node.written_in = budget.call();
    Ok(bytes.len() as u64)
}

/// Sets the file's size (`ftruncate`), within the budget.
pub fn set_size(file: &File, budget: &Budget, size: u64) -> FsResult<()> {
    let mut node = lock(file);
    budget.resize(node.data.len() as u64, size)?;
    node.data.resize(size as usize, 0);
    node.modified = SystemTime::now();
    node.written_in = budget.call();
    Ok(())
}

/// A folder's entries, `true` for a folder, in name order.
pub fn entries(dir: &Dir) -> Vec<(String, bool)> {
    lock(dir)
        .entries
        .iter()
        .map(|(name, node)| (name.clone(), matches!(node, Node::Dir(_))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_file_bytes: 100,
            max_folder_bytes: 150,
            max_files_per_call: 3,
            max_entries: 10,
        }
    }

    fn file_of(node: Node) -> File {
        match node {
            Node::File(f) => f,
            Node::Dir(_) => panic!("a folder"),
        }
    }

    #[test]
    fn paths_stay_inside_the_folder() {
        let folder = Folder::new(limits(), TotalMemory::unlimited());
        let root = folder.root();
        create_dir(&root, "a", true).unwrap();
        assert_eq!(
            lookup(&root, "../etc/passwd").unwrap_err(),
            FsError::NotPermitted
        );
        assert_eq!(
            lookup(&root, "/etc/passwd").unwrap_err(),
            FsError::NotPermitted
        );
        assert_eq!(
            lookup(&root, "a/../../x").unwrap_err(),
            FsError::NotPermitted
        );
        assert!(lookup(&root, "a/..").unwrap().same(&root.node));
        assert_eq!(lookup(&root, "nope").unwrap_err(), FsError::NoEntry);
    }

    #[test]
    fn writes_are_held_to_the_budget_and_counted_per_call() {
        let memory = TotalMemory::new(1000);
        let folder = Folder::new(limits(), memory.clone());
        let root = folder.root();
        let call = folder.budget.new_call();
        let f = file_of(open(&root, "a.txt", Open::create_truncate(), true).unwrap());
        assert_eq!(write_at(&f, &folder.budget, &[1; 80], None).unwrap(), 80);
        assert_eq!(
            write_at(&f, &folder.budget, &[1; 30], None).unwrap_err(),
            FsError::FileTooLarge,
            "a file past 100 bytes"
        );
        let g = file_of(open(&root, "b.txt", Open::create_truncate(), true).unwrap());
        assert_eq!(
            set_size(&g, &folder.budget, 80).unwrap_err(),
            FsError::NoSpace,
            "the folder past 150 bytes"
        );
        assert_eq!(memory.in_use(), 80);
        open(&root, "c.txt", Open::create_truncate(), true).unwrap();
        assert_eq!(
            open(&root, "d.txt", Open::create_truncate(), true).unwrap_err(),
            FsError::Quota,
            "a fourth file in one call"
        );
        let written: Vec<String> = folder
            .written_in(call)
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(written, ["a.txt", "b.txt", "c.txt"]);
        folder.budget.new_call();
        open(&root, "d.txt", Open::create_truncate(), true).unwrap();
        remove(&root, "a.txt", false).unwrap();
        assert_eq!(
            memory.in_use(),
            80,
            "a removed file still open keeps its bytes"
        );
        drop(f);
        assert_eq!(memory.in_use(), 0, "and gives them back when it closes");
        set_size(&g, &folder.budget, 10).unwrap();
        assert_eq!(memory.in_use(), 10);
        drop((g, root));
        drop(folder);
        assert_eq!(
            memory.in_use(),
            0,
            "a dropped folder gives back what it held"
        );
    }

    #[test]
    fn renames_keep_folders_acyclic_and_replace_files() {
        let folder = Folder::new(limits(), TotalMemory::unlimited());
        let root = folder.root();
        create_dir(&root, "a", true).unwrap();
        create_dir(&root, "a/b", true).unwrap();
        assert_eq!(
            rename(&root, "a", &root, "a/b/c").unwrap_err(),
            FsError::Invalid
        );
        folder.put("x", b"1".to_vec()).unwrap();
        folder.put("y", b"22".to_vec()).unwrap();
        rename(&root, "x", &root, "y").unwrap();
        let y = file_of(lookup(&root, "y").unwrap());
        assert_eq!(lock(&y).data, b"1");
        assert_eq!(folder.budget.bytes(), 1);
        rename(&root, "a", &root, "z").unwrap();
        assert!(
            lookup(&root, "z/b/..")
                .unwrap()
                .same(&lookup(&root, "z").unwrap())
        );
        assert_eq!(remove(&root, "z", true).unwrap_err(), FsError::NotEmpty);
        folder.put("out/charts/a.svg", b"<svg/>".to_vec()).unwrap();
        folder.put("out/b.csv", b"1".to_vec()).unwrap();
        assert!(matches!(
            lookup(&root, "out/charts/a.svg").unwrap(),
            Node::File(_)
        ));
    }

    fn roomy() -> Limits {
        Limits {
            max_file_bytes: 100,
            max_folder_bytes: 1000,
            max_files_per_call: 1000,
            max_entries: 1000,
        }
    }

    /// `n` folders, each in the one before, named `name`, under `top`.
    fn chain(root: &Descriptor, top: &str, name: &str, n: usize) -> String {
        let mut path = top.to_string();
        create_dir(root, &path, true).unwrap();
        for _ in 1..n {
            path = format!("{path}/{name}");
            create_dir(root, &path, true).unwrap();
        }
        path
    }

    #[test]
    fn renames_are_held_to_the_depth_and_path_limits_as_creations_are() {
        let folder = Folder::new(roomy(), TotalMemory::unlimited());
        let root = folder.root();
        let a = chain(&root, "a", "d", 16);
        chain(&root, "b", "d", 16);
        let c = chain(&root, "c", "d", 16);
        open(
            &root,
            &format!("{c}/deep.txt"),
            Open::create_truncate(),
            true,
        )
        .unwrap();
        // b (16 deep) under a's 16th folder: 32 deep, the most allowed.
        rename(&root, "b", &root, &format!("{a}/b")).unwrap();
        // c under it: 48 deep, refused, as creating it would be.
        let under = format!("{a}/b{}", "/d".repeat(15));
        assert_eq!(
            rename(&root, "c", &root, &format!("{under}/c")).unwrap_err(),
            FsError::NameTooLong
        );
        assert_eq!(
            create_dir(&root, &format!("{under}/x"), true).unwrap_err(),
            FsError::NameTooLong
        );
        // A file may sit in the deepest folder; a file may not be renamed below its reach.
        open(
            &root,
            &format!("{under}/f.txt"),
            Open::create_truncate(),
            true,
        )
        .unwrap();
        rename(
            &root,
            &format!("{c}/deep.txt"),
            &root,
            &format!("{under}/g.txt"),
        )
        .unwrap();

        // A name past 255 bytes is too long; `mkdir(".")` finds it there already.
        assert_eq!(
            create_dir(&root, &"n".repeat(256), true).unwrap_err(),
            FsError::NameTooLong
        );
        assert_eq!(create_dir(&root, ".", true).unwrap_err(), FsError::Exists);

        // A path past 4096 bytes, however shallow: by creation or by rename.
        let long = "n".repeat(255);
        let mut path = String::new();
        for i in 0..16 {
            path = if i == 0 {
                long.clone()
            } else {
                format!("{path}/{long}")
            };
            create_dir(&root, &path, true).unwrap();
        }
        assert_eq!(path.len(), 16 * 256 - 1);
        let file = format!("{path}/{}", "f".repeat(255));
        assert_eq!(
            open(&root, &file, Open::create_truncate(), true).unwrap_err(),
            FsError::NameTooLong
        );
        create_dir(&root, "x", true).unwrap();
        create_dir(&root, &format!("x/{long}"), true).unwrap();
        assert_eq!(
            rename(&root, "x", &root, &format!("{path}/x")).unwrap_err(),
            FsError::NameTooLong,
            "the folder fits, its contents would not"
        );

        // Whatever the folder holds goes back into a new one, as after a restart.
        let kept: Vec<FileCopy> = folder.written_in(folder.budget.call());
        assert!(kept.iter().any(|f| f.path.ends_with("/g.txt")), "{kept:?}");
        let again = Folder::new(roomy(), TotalMemory::unlimited());
        for file in &kept {
            again
                .put(&file.path, file.data.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", file.path));
        }
    }
}
