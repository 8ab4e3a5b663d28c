import sys

from tilewave.cli import main

sys.exit(main())
