//! # nexus-host
//!
//! The std side of nexus-uav: it drives [`nexus_core`] over real links and real processes.
#![forbid(unsafe_code)]
