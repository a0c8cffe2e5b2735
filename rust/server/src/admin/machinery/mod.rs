//! What every admin route goes through, whatever its resource: [`guard`] (who the caller is),
//! [`access`] (what it may call), [`rate_limit`], [`state`] (the context a handler is given,
//! a topic loaded, the topics a path addresses), [`topic_path`] (the topic a path names),
//! [`closing`] (changes that close a topic's clients), [`streamed`] (bodies written while sent)
//! and [`openapi`] (the description of every route).

pub(in crate::admin) mod access;
pub(in crate::admin) mod closing;
pub(in crate::admin) mod guard;
pub(in crate::admin) mod openapi;
pub(in crate::admin) mod rate_limit;
pub(in crate::admin) mod state;
pub(in crate::admin) mod streamed;
pub(in crate::admin) mod topic_path;
