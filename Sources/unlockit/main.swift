import UnlockITClient

await UnlockITCommand.runMain()
