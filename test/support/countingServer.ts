/**
 * A loopback server that counts the requests it gets: the service an attack tries to make this one
 * reach, where the count must stay 0.
 */
export const countingServer = (answer: () => Response) => {
  let requests = 0
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => {
      requests++
      return answer()
    }
  })
  return {
    port: server.port as number,
    requests: () => requests,
    stop: () => server.stop(true)
  }
}
