"""The `facefuse` command line: one module per command, the options they share, and main()."""
