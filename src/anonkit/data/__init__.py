"""Tables in and out: the schema of roles and kinds, encoding, reading and writing."""
