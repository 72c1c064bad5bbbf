package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"keeper/server"
	"keeper/zoocfg"
)

func newSandboxCmd() *cobra.Command {
	var dataDir string
	var port int
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run keeper locally: a coordination server on 127.0.0.1:2181",
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := newLogger()
			zc := zoocfg.Default()
			zc.DataDir = dataDir
			zc.ClientPort = port
			zc.FourLetterWhitelist = []string{"*"}
			zc.ExtendedTypesEnabled = true
			zc.AdminServerAddress = "127.0.0.1"
			if err := zc.Validate(); err != nil {
				return err
			}
			return runServer(cmd.Context(), zc, logger, func(s *server.Server) {
				fmt.Printf("keeper sandbox is running (data in %s). Press Ctrl-C to stop.\n", dataDir)
				fmt.Printf("  coordination server: %s\n", s.Addr())
				if a := s.AdminAddr(); a != nil {
					fmt.Printf("  admin and metrics:   http://%s/commands  http://%s/metrics\n", a, a)
				}
				fmt.Printf("  try: go run ./cmd/keeper shell --server %s ls /\n", s.Addr())
				fmt.Printf("   or: zkCli.sh -server %s\n", s.Addr())
			})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "keeper-data", "directory for the sandbox's data")
	cmd.Flags().IntVar(&port, "port", 2181, "client port of the coordination server")
	return cmd
}
