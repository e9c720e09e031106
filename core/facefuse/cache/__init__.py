"""What facefuse keeps between runs, all under one CacheLayout root: source embeddings, shot
analyses, preview pictures and remembered file hashes; and the file locks that let processes
sharing those folders (farm storage) take turns."""
