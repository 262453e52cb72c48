//! Placeholder until the Node VFS lands.
