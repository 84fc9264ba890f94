//! WASI's `wasi:filesystem/{types,preopens}` over a session's in-memory folder ([`super::tree`]),
//! through [`FilesView`]: the folder and the call's resource table, nothing else of the state.
//! A store without the grant sees no preopened directory at all, so the interfaces link for
//! any component but give it nothing.

use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi_io::async_trait;
use wasmtime_wasi_io::poll::Pollable;
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream, StreamError, StreamResult};
use wasmtime_wasi_io::streams::{InputStream, OutputStream};

use super::WORKDIR;
use super::tree::{self, Descriptor, Entries, FsError, Node, Open};

mod bindings {
    wasmtime::component::bindgen!({
        path: "src/plugins/capabilities/files/wit",
        world: "chatd:files/session-files",
        imports: { default: trappable },
        require_store_data_send: true,
        with: {
            "wasi:io/poll": wasmtime_wasi_io::bindings::wasi::io::poll,
            "wasi:io/streams": wasmtime_wasi_io::bindings::wasi::io::streams,
            "wasi:io/error": wasmtime_wasi_io::bindings::wasi::io::error,
            "wasi:clocks/wall-clock": wasmtime_wasi::p2::bindings::clocks::wall_clock,
            "wasi:filesystem/types.descriptor": crate::plugins::capabilities::files::tree::Descriptor,
            "wasi:filesystem/types.directory-entry-stream": crate::plugins::capabilities::files::tree::Entries,
        },
    });
}

use bindings::wasi::filesystem::{preopens, types};
use types::{DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode};

/// What the filesystem interfaces see of one store's state: its folder (none without the
/// grant) and the resource table descriptors and streams live in.
pub struct FilesView<'a> {
    pub folder: Option<&'a tree::Folder>,
    pub table: &'a mut ResourceTable,
}

/// Links the filesystem interfaces through [`FilesView`].
pub struct FilesHost;

impl HasData for FilesHost {
    type Data<'a> = FilesView<'a>;
}

/// Adds `wasi:filesystem/{types,preopens}` to `linker`, each call reaching `view`.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    view: fn(&mut T) -> FilesView<'_>,
) -> wasmtime::Result<()> {
    types::add_to_linker::<T, FilesHost>(linker, view)?;
    preopens::add_to_linker::<T, FilesHost>(linker, view)?;
    Ok(())
}

type Result<T> = wasmtime::Result<std::result::Result<T, ErrorCode>>;

fn code(e: FsError) -> ErrorCode {
    match e {
        FsError::NoEntry => ErrorCode::NoEntry,
        FsError::Exists => ErrorCode::Exist,
        FsError::NotDirectory => ErrorCode::NotDirectory,
        FsError::IsDirectory => ErrorCode::IsDirectory,
        FsError::NotEmpty => ErrorCode::NotEmpty,
        FsError::NotPermitted => ErrorCode::NotPermitted,
        FsError::Invalid => ErrorCode::Invalid,
        FsError::BadDescriptor => ErrorCode::BadDescriptor,
        FsError::FileTooLarge => ErrorCode::FileTooLarge,
        FsError::NoSpace => ErrorCode::InsufficientSpace,
        FsError::Quota => ErrorCode::Quota,
        FsError::Unsupported => ErrorCode::Unsupported,
        FsError::NameTooLong => ErrorCode::NameTooLong,
    }
}

fn answer<T>(r: tree::FsResult<T>) -> Result<T> {
    Ok(r.map_err(code))
}

/// `value` pushed into the store's resource table: when the table is full (a guest holding
/// too many files, directories or streams open), an error the guest sees (`insufficient-memory`,
/// which its libc reads as `ENOMEM`), never a trap that would end the session.
fn pushed<T: Send + 'static>(table: &mut ResourceTable, value: T) -> Result<Resource<T>> {
    match table.push(value) {
        Ok(resource) => Ok(Ok(resource)),
        Err(wasmtime::component::ResourceTableError::Full) => {
            Ok(Err(ErrorCode::InsufficientMemory))
        }
        Err(other) => Err(other.into()),
    }
}

impl FilesView<'_> {
    fn get(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<&Descriptor> {
        Ok(self.table.get(fd)?)
    }

    fn file(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<tree::FsResult<tree::File>> {
        Ok(match &self.get(fd)?.node {
            Node::File(f) => Ok(f.clone()),
            Node::Dir(_) => Err(FsError::IsDirectory),
        })
    }

    /// The file `fd` is and its folder's budget, when `fd` may write it.
    fn writable(
        &self,
        fd: &Resource<Descriptor>,
    ) -> wasmtime::Result<tree::FsResult<(tree::File, Arc<tree::Budget>)>> {
        let d = self.get(fd)?;
        Ok(match (&d.node, d.write) {
            (Node::Dir(_), _) => Err(FsError::IsDirectory),
            (Node::File(_), false) => Err(FsError::NotPermitted),
            (Node::File(f), true) => Ok((f.clone(), d.budget.clone())),
        })
    }

    fn new_descriptor(
        &mut self,
        node: Node,
        write: bool,
        like: &Resource<Descriptor>,
    ) -> Result<Resource<Descriptor>> {
        let budget = self.get(like)?.budget.clone();
        pushed(
            self.table,
            Descriptor {
                node,
                write,
                budget,
            },
        )
    }
}

impl preopens::Host for FilesView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let Some(folder) = self.folder else {
            return Ok(Vec::new());
        };
        let root = self.table.push(folder.root())?;
        Ok(vec![(root, WORKDIR.to_string())])
    }
}

impl types::Host for FilesView<'_> {
    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        let err = self.table.get(&err)?;
        Ok(err.downcast_ref::<FsError>().map(|e| code(*e)))
    }
}

fn datetime(t: SystemTime) -> types::Datetime {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    types::Datetime {
        seconds: since.as_secs(),
        nanoseconds: since.subsec_nanos(),
    }
}

fn stat_of(node: &Node) -> DescriptorStat {
    let (kind, size, modified) = match node {
        Node::File(f) => {
            let f = tree::lock(f);
            (DescriptorType::RegularFile, f.data.len() as u64, f.modified)
        }
        Node::Dir(d) => (DescriptorType::Directory, 0, tree::lock(d).modified),
    };
    DescriptorStat {
        type_: kind,
        link_count: 1,
        size,
        data_access_timestamp: Some(datetime(modified)),
        data_modification_timestamp: Some(datetime(modified)),
        status_change_timestamp: Some(datetime(modified)),
    }
}

fn hash_of(node: &Node) -> types::MetadataHashValue {
    types::MetadataHashValue {
        lower: node.number(),
        upper: 0,
    }
}

impl types::HostDescriptor for FilesView<'_> {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: u64,
    ) -> Result<Resource<DynInputStream>> {
        let file = match self.file(&fd)? {
            Ok(f) => f,
            Err(e) => return answer(Err(e)),
        };
        let stream: DynInputStream = Box::new(Reader { file, offset });
        pushed(self.table, stream)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: u64,
    ) -> Result<Resource<DynOutputStream>> {
        self.writer(fd, Some(offset))
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> Result<Resource<DynOutputStream>> {
        self.writer(fd, None)
    }

    fn advise(
        &mut self,
        _fd: Resource<Descriptor>,
        _offset: u64,
        _length: u64,
        _advice: types::Advice,
    ) -> Result<()> {
        Ok(Ok(()))
    }

    fn sync_data(&mut self, _fd: Resource<Descriptor>) -> Result<()> {
        Ok(Ok(()))
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> Result<DescriptorFlags> {
        let d = self.get(&fd)?;
        let mut flags = DescriptorFlags::READ;
        if d.write {
            flags |= match d.node {
                Node::File(_) => DescriptorFlags::WRITE,
                Node::Dir(_) => DescriptorFlags::MUTATE_DIRECTORY,
            };
        }
        Ok(Ok(flags))
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> Result<DescriptorType> {
        Ok(Ok(match self.get(&fd)?.node {
            Node::File(_) => DescriptorType::RegularFile,
            Node::Dir(_) => DescriptorType::Directory,
        }))
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: u64) -> Result<()> {
        answer(
            self.writable(&fd)?
                .and_then(|(file, budget)| tree::set_size(&file, &budget, size)),
        )
    }

    fn set_times(
        &mut self,
        _fd: Resource<Descriptor>,
        _atime: types::NewTimestamp,
        _mtime: types::NewTimestamp,
    ) -> Result<()> {
        Ok(Ok(()))
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        length: u64,
        offset: u64,
    ) -> Result<(Vec<u8>, bool)> {
        answer(
            self.file(&fd)?
                .map(|file| tree::read_at(&file, length, offset)),
        )
    }

    fn write(&mut self, fd: Resource<Descriptor>, buffer: Vec<u8>, offset: u64) -> Result<u64> {
        answer(
            self.writable(&fd)?
                .and_then(|(file, budget)| tree::write_at(&file, &budget, &buffer, Some(offset))),
        )
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> Result<Resource<Entries>> {
        let entries = match &self.get(&fd)?.node {
            Node::Dir(d) => tree::entries(d),
            Node::File(_) => return answer(Err(FsError::NotDirectory)),
        };
        pushed(self.table, Entries(entries.into_iter()))
    }

    fn sync(&mut self, _fd: Resource<Descriptor>) -> Result<()> {
        Ok(Ok(()))
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> Result<()> {
        answer(tree::create_dir(self.get(&fd)?, &path, true))
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> Result<DescriptorStat> {
        Ok(Ok(stat_of(&self.get(&fd)?.node)))
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: types::PathFlags,
        path: String,
    ) -> Result<DescriptorStat> {
        answer(tree::lookup(self.get(&fd)?, &path).map(|node| stat_of(&node)))
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: types::PathFlags,
        path: String,
        _atime: types::NewTimestamp,
        _mtime: types::NewTimestamp,
    ) -> Result<()> {
        answer(tree::lookup(self.get(&fd)?, &path).map(drop))
    }

    fn link_at(
        &mut self,
        _fd: Resource<Descriptor>,
        _old_flags: types::PathFlags,
        _old_path: String,
        _new_fd: Resource<Descriptor>,
        _new_path: String,
    ) -> Result<()> {
        answer(Err(FsError::NotPermitted))
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        _path_flags: types::PathFlags,
        path: String,
        open_flags: types::OpenFlags,
        flags: DescriptorFlags,
    ) -> Result<Resource<Descriptor>> {
        let how = Open {
            create: open_flags.contains(types::OpenFlags::CREATE),
            exclusive: open_flags.contains(types::OpenFlags::EXCLUSIVE),
            truncate: open_flags.contains(types::OpenFlags::TRUNCATE),
            directory: open_flags.contains(types::OpenFlags::DIRECTORY),
        };
        let wants_write = flags
            .intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY)
            || how.create
            || how.truncate;
        let d = self.get(&fd)?;
        if wants_write && !d.write {
            return answer(Err(FsError::NotPermitted));
        }
        let node = match tree::open(d, &path, how, true) {
            Ok(node) => node,
            Err(e) => return answer(Err(e)),
        };
        if matches!(node, Node::Dir(_)) && flags.contains(DescriptorFlags::WRITE) {
            return answer(Err(FsError::IsDirectory));
        }
        // A folder is as writable as the one it was opened from, whatever the flags (as under
        // wasmtime-wasi's preopens: `shutil.rmtree` unlinks through folders opened read-only);
        // a file only when opened for writing.
        let write = match node {
            Node::Dir(_) => d.write,
            Node::File(_) => d.write && flags.contains(DescriptorFlags::WRITE),
        };
        self.new_descriptor(node, write, &fd)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> Result<String> {
        // Nothing is a link: a path that names something names it itself.
        answer(tree::lookup(self.get(&fd)?, &path).and(Err(FsError::Invalid)))
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> Result<()> {
        answer(tree::remove(self.get(&fd)?, &path, true))
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> Result<()> {
        answer(tree::rename(
            self.get(&fd)?,
            &old_path,
            self.get(&new_fd)?,
            &new_path,
        ))
    }

    fn symlink_at(&mut self, _fd: Resource<Descriptor>, _old: String, _new: String) -> Result<()> {
        answer(Err(FsError::NotPermitted))
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> Result<()> {
        answer(tree::remove(self.get(&fd)?, &path, false))
    }

    fn is_same_object(
        &mut self,
        fd: Resource<Descriptor>,
        other: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        Ok(self.get(&fd)?.node.same(&self.get(&other)?.node))
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> Result<types::MetadataHashValue> {
        Ok(Ok(hash_of(&self.get(&fd)?.node)))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: types::PathFlags,
        path: String,
    ) -> Result<types::MetadataHashValue> {
        answer(tree::lookup(self.get(&fd)?, &path).map(|node| hash_of(&node)))
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(fd)?;
        Ok(())
    }
}

impl FilesView<'_> {
    fn writer(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Option<u64>,
    ) -> Result<Resource<DynOutputStream>> {
        let (file, budget) = match self.writable(&fd)? {
            Ok(found) => found,
            Err(e) => return answer(Err(e)),
        };
        let stream: DynOutputStream = Box::new(Writer {
            file,
            budget,
            offset,
        });
        pushed(self.table, stream)
    }
}

impl types::HostDirectoryEntryStream for FilesView<'_> {
    fn read_directory_entry(
        &mut self,
        entries: Resource<Entries>,
    ) -> Result<Option<types::DirectoryEntry>> {
        let entries = self.table.get_mut(&entries)?;
        Ok(Ok(entries.0.next().map(|(name, is_dir)| {
            types::DirectoryEntry {
                type_: if is_dir {
                    DescriptorType::Directory
                } else {
                    DescriptorType::RegularFile
                },
                name,
            }
        })))
    }

    fn drop(&mut self, entries: Resource<Entries>) -> wasmtime::Result<()> {
        self.table.delete(entries)?;
        Ok(())
    }
}

/// Reads a file from an offset; in memory, always ready.
struct Reader {
    file: tree::File,
    offset: u64,
}

#[async_trait]
impl Pollable for Reader {
    async fn ready(&mut self) {}
}

impl InputStream for Reader {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        let (bytes, end) = tree::read_at(&self.file, size as u64, self.offset);
        if bytes.is_empty() && end && size > 0 {
            return Err(StreamError::Closed);
        }
        self.offset += bytes.len() as u64;
        Ok(Bytes::from(bytes))
    }
}

/// Writes a file from an offset (`None`: appends), each write within the folder's budget; a
/// refused write fails with its [`FsError`], which `filesystem-error-code` names to the guest
/// (Python sees `OSError: [Errno 27] File too large`, or `No space left on device`).
struct Writer {
    file: tree::File,
    budget: Arc<tree::Budget>,
    offset: Option<u64>,
}

/// How much one write may carry; the guest loops for more.
const WRITE_CHUNK: usize = 1 << 20;

#[async_trait]
impl Pollable for Writer {
    async fn ready(&mut self) {}
}

impl OutputStream for Writer {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let written = tree::write_at(&self.file, &self.budget, &bytes, self.offset)
            .map_err(|e| StreamError::LastOperationFailed(wasmtime::Error::new(e)))?;
        if let Some(offset) = &mut self.offset {
            *offset += written;
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_CHUNK)
    }
}
