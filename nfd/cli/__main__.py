import sys

from nfd.cli import main

sys.exit(main())
