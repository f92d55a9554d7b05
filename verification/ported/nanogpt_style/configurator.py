# Command-line overrides for train.py and sample.py, read in their own namespace as nanoGPT's
# configurator is: `exec(open('configurator.py').read())`. An argument without `--` names a
# Python config file run over the defaults; `--key=value` sets one existing global, the value
# read as a Python literal when it parses as one (else kept as a string) and of the same type.
import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    if not arg.startswith("--"):
        print(f"config file: {arg}")
        with open(arg) as cfg_file:
            exec(cfg_file.read())
        continue
    key, sep, raw = arg[2:].partition("=")
    if not sep or key not in globals():
        raise SystemExit(f"unknown or malformed override: {arg}")
    try:
        value = literal_eval(raw)
    except (SyntaxError, ValueError):
        value = raw
    if type(value) is not type(globals()[key]):
        raise SystemExit(f"--{key} wants a {type(globals()[key]).__name__}, got {raw!r}")
    print(f"override: {key} = {value!r}")
    globals()[key] = value
