"""Facts about one file, shared by rules.

Each analysis is a class that takes the `FileContext` (`file.module`: the libcst tree,
`file.tree`: the `ast` tree, `file.text`, `file.settings`) and is built lazily, at most
once per file, by `file.fact(AnalysisClass)`. Rules ask analyses; they never derive
such facts themselves.
"""
