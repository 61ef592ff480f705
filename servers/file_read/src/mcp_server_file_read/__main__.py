from mcp_server_file_read import main

main()
