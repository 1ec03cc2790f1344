from rllint.cli import main

main()
