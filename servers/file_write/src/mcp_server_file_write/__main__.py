from mcp_server_file_write import main

main()
