"""What every part of Glassbox shares: the data contracts (``contracts``), the config checker (``schema``)
and the ``glassbox`` command line (``cli``). Standard library and PyYAML only, so any part may import it."""
