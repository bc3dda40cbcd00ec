"""The sequential engines: each continues a method from its state in the history."""
