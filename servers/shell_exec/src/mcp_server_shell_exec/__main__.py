from mcp_server_shell_exec import main

main()
