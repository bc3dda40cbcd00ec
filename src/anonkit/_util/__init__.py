"""Small helpers every layer may use: numbers, grouping keys, files, options, parallel
work, randomness. Nothing here imports the rest of anonkit."""
