from bgbench.coordinator.cli import main

main()
