//! The crate's error enum; each variant maps to the errno the kernel hands back to the caller.

use std::ffi::OsString;

/// What a file-system operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PowerFsError {
    /// No such file, directory or inode.
    #[error("not found: {0:?}")]
    NotFound(OsString),
    /// The name exists already (create, mkdir, rename with RENAME_NOREPLACE).
    #[error("already exists: {0:?}")]
    Exists(OsString),
    /// A directory was expected.
    #[error("not a directory")]
    NotDir,
    /// A file was expected.
    #[error("is a directory")]
    IsDir,
    /// rmdir (or rename over) a directory that still has entries.
    #[error("directory not empty: {0:?}")]
    NotEmpty(OsString),
    /// The power was cut: nothing works until the file system is mounted again.
    #[error("the power is cut")]
    PowerCut,
    /// Hard links, symlinks, special files, RENAME_EXCHANGE: not modelled.
    #[error("not supported by powerfs: {0}")]
    Unsupported(&'static str),
    /// A bad argument (a name with '/', a rename of a directory into itself, ...).
    #[error("invalid argument: {0}")]
    Invalid(&'static str),
    /// Reading or writing the backing directory failed.
    #[error("backing store {path}: {source}")]
    Backing {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl PowerFsError {
    /// The errno reported to the kernel for this error.
    pub fn errno(&self) -> i32 {
        match self {
            PowerFsError::NotFound(_) => libc::ENOENT,
            PowerFsError::Exists(_) => libc::EEXIST,
            PowerFsError::NotDir => libc::ENOTDIR,
            PowerFsError::IsDir => libc::EISDIR,
            PowerFsError::NotEmpty(_) => libc::ENOTEMPTY,
            PowerFsError::PowerCut | PowerFsError::Backing { .. } => libc::EIO,
            PowerFsError::Unsupported(_) => libc::EOPNOTSUPP,
            PowerFsError::Invalid(_) => libc::EINVAL,
        }
    }

    pub(crate) fn backing(path: &std::path::Path, source: std::io::Error) -> Self {
        PowerFsError::Backing {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, PowerFsError>;
