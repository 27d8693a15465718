import { registerBackend } from '@sluice/core';
import { fpgaSimBackend } from './backend.js';

registerBackend('fpga-sim', fpgaSimBackend);
