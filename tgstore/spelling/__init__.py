"""Spelling, on the ground floor: every map that makes two spellings of the same IR compare equal. `svod` maps Svod's
spelling to tinygrad's (tables in maps.toml); `eras` maps older tinygrad releases' spellings of kernel ASTs to one.
store/, compare/ and svod/ all read it; it imports nothing of tgstore's."""
