// The reconnecting agent bound to the installed @ag-ui/client and rxjs.
import { HttpAgent } from "@ag-ui/client";
import { Observable } from "rxjs";
import { withReconnect } from "./reconnect.mjs";
import { cancelOnStop } from "./stop.mjs";

export { cancelOnStop, withReconnect };
export const ReconnectingHttpAgent = withReconnect(HttpAgent, Observable);
