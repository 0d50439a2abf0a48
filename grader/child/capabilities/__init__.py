"""The capability layer: what the submission's code can reach, decided on the objects themselves.

- rewrite.py: the syntax tree rewritten so that reads, writes, classes and values others bind go
  through the checks, then compiled from the very text the grader checked;
- checks.py: the run-time checks (Capabilities), on every read, write, class and value;
- allowed.py: the rules' allow-lists resolved to the objects they name, once per process;
- arrays.py: what numpy makes, checked where numpy makes it: numpy.ndarray's constructor, and no
  array of Python objects;
- builtins.py: the restricted built-ins and the stand-in for `type`;
- callers.py: who called the file's special method: the interpreter may, numpy's and torch's C code
  may not;
- relays.py: a callable of someone else's handed to the file as a value comes as a relay, which
  checks who called it, as the file's own functions do;
- standins.py: the library functions the file gets checked versions of (conversions copy);
- classes.py: what any class's namespace may hold, whatever built it;
- slots.py: reads through the built-in types' own slots.
"""
