//! placeholder until the plugin client lands
