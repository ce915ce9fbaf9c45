"""Each chapter's data, tables and sentences, computed once here and rendered by its page in book/ (one module per chapter that needs more than the shared helpers)."""
