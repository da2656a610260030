"""The release's own validation code, read as data and walked with the user's values: one reader of guards that
`compat explain` (a raise's condition against the values its message shows) and `compat doctor` (every raise and
assert on the way from a launch line to the speculative config, against the line, the release's defaults and the
models' configs) share.

    values.py       Unknown (with why), Obj (an object read attribute by attribute), join
    expressions.py  an expression's value or truth, three-valued (explain's guards, the walk's expressions)
    program.py      a spec_validation probe fact read back (functions, classes, constants); messages rendered
    statements.py   the walk: statements in order, both branches of an unknown test, calls followed
    models.py       what is modelled (a model's config from its config.json, the platform), said there
    run.py          one release's validation with a launch line's inputs -> Outcome (refused / passes / unknown)
"""
