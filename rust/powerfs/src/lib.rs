//! powerfs: a FUSE file system for power-loss tests. Processes see a normal file system; the
//! backing directory receives a file's data only at its fsync and a directory entry only at the
//! directory's fsync, so it always holds exactly what a power cut would leave. Writing `cut` to
//! `/.powerfs` in the mount cuts the power (see [`fuse`]).
//!
//! Modules: [`model`] (the semantics, testable without FUSE), [`backing`] (the durable image on
//! disk), [`fuse`] (kernel requests onto the model), [`error`].

pub mod backing;
pub mod error;
pub mod fuse;
pub mod model;

pub use error::{PowerFsError, Result};
pub use fuse::{PowerFs, CONTROL_NAME};
pub use model::{Kind, Model, ROOT};
