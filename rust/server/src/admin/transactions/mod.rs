//! Pulsar's `/admin/v3/transactions`: the stats of coordinators, transactions, buffers and
//! pending acks ([`stats`]), and the coordinators as an operator handles them
//! ([`coordinators`]).

pub(in crate::admin) mod coordinators;
pub(in crate::admin) mod stats;
