"""``python -m dpforge.cli``: the command line, also as ``torchrun -m dpforge.cli fit ...``."""

from dpforge.cli import main

if __name__ == "__main__":
    main()
