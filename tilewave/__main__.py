from tilewave.cli import entry

entry()
