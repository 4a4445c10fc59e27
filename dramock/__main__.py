from dramock.cli import main

raise SystemExit(main())
